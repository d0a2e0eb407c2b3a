import type {
  OAuthClientMetadata,
  OAuthClientProvider,
  OAuthDiscoveryState,
  StoredOAuthClientInformation,
  StoredOAuthTokens,
} from "@modelcontextprotocol/client";

/**
 * An OAuth provider for the SDK v2 client (`@modelcontextprotocol/client`), kept in memory. With `clientMetadataUrl`
 * it identifies itself by that Client ID Metadata Document; without, it registers (dynamic registration). Every
 * authorization URL the client would open is kept in `authorizationUrls`, newest last.
 */
export class MemoryOAuthProviderV2 implements OAuthClientProvider {
  client: StoredOAuthClientInformation | undefined;
  saved: StoredOAuthTokens | undefined;
  discovery: OAuthDiscoveryState | undefined;
  verifier = "";
  readonly authorizationUrls: URL[] = [];
  readonly clientMetadataUrl?: string;
  private readonly metadata: OAuthClientMetadata;

  constructor(
    readonly redirectUrl: string,
    clientName: string,
    options: { clientMetadataUrl?: string } = {},
  ) {
    this.clientMetadataUrl = options.clientMetadataUrl;
    this.metadata = { client_name: clientName, redirect_uris: [redirectUrl], token_endpoint_auth_method: "none" };
  }

  get clientMetadata(): OAuthClientMetadata {
    return this.metadata;
  }
  get authorizationUrl(): URL | undefined {
    return this.authorizationUrls.at(-1);
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: StoredOAuthClientInformation) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: StoredOAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrls.push(url);
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
}
