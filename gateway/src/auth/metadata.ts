import type { GatewayConfig } from "../config.ts";

export const SCOPES_SUPPORTED = ["read", "write"];

/** RFC 9728: what the MCP endpoint is and which authorization server issues its tokens. */
export function protectedResourceMetadata(config: GatewayConfig) {
  return {
    resource: config.mcpUrl,
    authorization_servers: [config.baseUrl],
    scopes_supported: SCOPES_SUPPORTED,
    bearer_methods_supported: ["header"],
    resource_name: "Hatch",
  };
}

/** RFC 8414 (also served as OpenID configuration, which some clients try first). */
export function authorizationServerMetadata(config: GatewayConfig) {
  const base = config.baseUrl;
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    registration_endpoint: `${base}/oauth/register`,
    revocation_endpoint: `${base}/oauth/revoke`,
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
    scopes_supported: SCOPES_SUPPORTED,
  };
}
