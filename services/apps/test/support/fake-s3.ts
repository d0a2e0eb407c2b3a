/**
 * A local S3-compatible server for tests. It speaks the wire format Bun's S3 client sends (path-style
 * `/<bucket>/<key>`, PUT/GET/HEAD/DELETE of whole objects, `UNSIGNED-PAYLOAD`) and verifies AWS Signature V4 on
 * every request the way S3 does, so a test that passes proves the adapter signs correctly. Anything it does not
 * implement (listing, multipart, ranges, copies) is refused with 501 rather than silently answered.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

export interface FakeS3Options {
  accessKeyId?: string;
  secretAccessKey?: string;
  region?: string;
  bucket?: string;
  /** The server's clock, for the request time check (S3 refuses requests more than 15 minutes off). */
  now?: () => Date;
}

export interface FakeS3Request {
  method: string;
  key: string;
  status: number;
}

export interface FakeS3 {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  objects: Map<string, Uint8Array>;
  /** The Content-Type each object was stored with. */
  contentTypes: Map<string, string>;
  requests: FakeS3Request[];
  stop(): Promise<void>;
}

const MAX_SKEW_MS = 15 * 60 * 1000;
const AUTH_HEADER =
  /^AWS4-HMAC-SHA256 Credential=([^/\s]+)\/(\d{8})\/([^/\s]+)\/s3\/aws4_request,\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$/;

class S3Failure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function startFakeS3(options: FakeS3Options = {}): FakeS3 {
  const fake = {
    bucket: options.bucket ?? "hatch-test",
    accessKeyId: options.accessKeyId ?? "FAKEACCESSKEY",
    secretAccessKey: options.secretAccessKey ?? crypto.randomUUID(),
    region: options.region ?? "us-east-1",
    objects: new Map<string, Uint8Array>(),
    contentTypes: new Map<string, string>(),
    requests: [] as FakeS3Request[],
  };
  const now = options.now ?? (() => new Date());
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const body = new Uint8Array(await request.arrayBuffer());
      let key = "";
      let response: Response;
      try {
        const target = parsePath(url.pathname);
        key = target.key;
        verifySignature(request, url, body, { ...fake, now: now() });
        if (target.bucket !== fake.bucket)
          throw new S3Failure(404, "NoSuchBucket", "The specified bucket does not exist.");
        if (!key) throw new S3Failure(501, "NotImplemented", "the fake S3 serves objects only, not bucket operations");
        response = handleObject(request, url, body, key, fake);
      } catch (error) {
        if (!(error instanceof S3Failure)) throw error;
        response = errorResponse(error, request.method, key);
      }
      fake.requests.push({ method: request.method, key, status: response.status });
      return response;
    },
  });
  return {
    ...fake,
    endpoint: `http://127.0.0.1:${server.port}`,
    stop: () => server.stop(true),
  };
}

type FakeState = Pick<FakeS3, "bucket" | "objects" | "contentTypes">;

function handleObject(request: Request, url: URL, body: Uint8Array, key: string, fake: FakeState): Response {
  if (url.search) throw new S3Failure(501, "NotImplemented", "the fake S3 serves no sub-resources or multipart");
  if (request.headers.has("range")) throw new S3Failure(501, "NotImplemented", "the fake S3 serves no ranges");
  if (request.headers.has("x-amz-copy-source")) throw new S3Failure(501, "NotImplemented", "no copies");
  const stored = fake.objects.get(key);
  switch (request.method) {
    case "PUT":
      fake.objects.set(key, body);
      fake.contentTypes.set(key, request.headers.get("content-type") ?? "binary/octet-stream");
      return new Response(null, { status: 200, headers: { ETag: etagOf(body), ...requestIdHeader() } });
    case "GET":
    case "HEAD": {
      if (!stored) throw new S3Failure(404, "NoSuchKey", "The specified key does not exist.");
      const headers = {
        "Content-Type": fake.contentTypes.get(key) ?? "binary/octet-stream",
        "Content-Length": String(stored.byteLength),
        ETag: etagOf(stored),
        ...requestIdHeader(),
      };
      // A copy: Response wants an ArrayBuffer-backed view, and the stored bytes stay untouched.
      return new Response(request.method === "GET" ? stored.slice() : null, { status: 200, headers });
    }
    case "DELETE":
      fake.objects.delete(key);
      fake.contentTypes.delete(key);
      return new Response(null, { status: 204, headers: requestIdHeader() });
    default:
      throw new S3Failure(405, "MethodNotAllowed", "The specified method is not allowed against this resource.");
  }
}

/** Path-style addressing, the only style Bun's client uses unless told otherwise: `/<bucket>/<key>`. */
function parsePath(pathname: string): { bucket: string; key: string } {
  const [, bucket = "", ...rest] = pathname.split("/").map(decodeSegment);
  return { bucket, key: rest.join("/") };
}

interface VerifyState {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  now: Date;
}

/** What S3 checks before it looks at the bucket: the Authorization header, the date, the payload hash, the signature. */
function verifySignature(request: Request, url: URL, body: Uint8Array, state: VerifyState): void {
  const authorization = request.headers.get("authorization");
  if (!authorization) throw new S3Failure(403, "AccessDenied", "Access Denied");
  const match = AUTH_HEADER.exec(authorization);
  if (!match) throw new S3Failure(400, "AuthorizationHeaderMalformed", "The authorization header is malformed.");
  const [, accessKeyId, scopeDate, region, signedHeaderList = "", signature = ""] = match;
  const amzDate = request.headers.get("x-amz-date") ?? "";
  if (accessKeyId !== state.accessKeyId) {
    throw new S3Failure(403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.");
  }
  if (region !== state.region) {
    throw new S3Failure(
      400,
      "AuthorizationHeaderMalformed",
      `the region '${region}' is wrong; expecting '${state.region}'`,
    );
  }
  checkRequestTime(amzDate, scopeDate ?? "", state.now);
  const signedHeaders = signedHeaderList.split(";");
  const unsigned = [...request.headers.keys()].filter(
    (name) => name.startsWith("x-amz-") && !signedHeaders.includes(name),
  );
  if (!signedHeaders.includes("host") || unsigned.length > 0) {
    throw new S3Failure(403, "AccessDenied", "There were headers present in the request which were not signed");
  }
  const payloadHash = verifyPayloadHash(request.headers.get("x-amz-content-sha256"), body);
  const expected = sigV4Signature({
    method: request.method,
    path: url.pathname,
    query: url.search.slice(1),
    headers: request.headers,
    signedHeaders,
    payloadHash,
    amzDate,
    region: state.region,
    secretAccessKey: state.secretAccessKey,
  });
  if (!timingSafeEqual(Buffer.from(expected), Buffer.from(signature))) {
    const message = "The request signature we calculated does not match the signature you provided.";
    throw new S3Failure(403, "SignatureDoesNotMatch", message);
  }
}

function checkRequestTime(amzDate: string, scopeDate: string, now: Date): void {
  const time = parseAmzDate(amzDate);
  if (time === null) throw new S3Failure(403, "AccessDenied", "AWS authentication requires a valid x-amz-date header");
  if (scopeDate !== amzDate.slice(0, 8)) {
    throw new S3Failure(400, "AuthorizationHeaderMalformed", "The credential date does not match the x-amz-date date.");
  }
  if (Math.abs(time - now.getTime()) > MAX_SKEW_MS) {
    const message = "The difference between the request time and the current time is too large.";
    throw new S3Failure(403, "RequestTimeTooSkewed", message);
  }
}

function verifyPayloadHash(header: string | null, body: Uint8Array): string {
  if (header === null) {
    throw new S3Failure(400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256");
  }
  if (header === "UNSIGNED-PAYLOAD") return header;
  if (!/^[0-9a-f]{64}$/.test(header))
    throw new S3Failure(501, "NotImplemented", `the fake S3 does not accept ${header}`);
  if (sha256Hex(body) !== header) {
    const message = "The provided 'x-amz-content-sha256' header does not match what was computed.";
    throw new S3Failure(400, "XAmzContentSHA256Mismatch", message);
  }
  return header;
}

export interface SigV4Input {
  method: string;
  /** The request path as sent (percent-encoded); it is re-encoded the way S3 canonicalises it. */
  path: string;
  /** The query string without `?`. */
  query: string;
  headers: Headers;
  signedHeaders: string[];
  payloadHash: string;
  /** The x-amz-date value (YYYYMMDDTHHMMSSZ); its date part is the credential scope's date. */
  amzDate: string;
  region: string;
  secretAccessKey: string;
}

/** The AWS Signature V4 of an S3 request (service `s3`), as hex. */
export function sigV4Signature(input: SigV4Input): string {
  const canonicalRequest = [
    input.method,
    canonicalUri(input.path),
    canonicalQuery(input.query),
    input.signedHeaders.map((name) => `${name}:${canonicalHeaderValue(input.headers.get(name))}\n`).join(""),
    input.signedHeaders.join(";"),
    input.payloadHash,
  ].join("\n");
  const scopeDate = input.amzDate.slice(0, 8);
  const scope = `${scopeDate}/${input.region}/s3/aws4_request`;
  const stringToSign = ["AWS4-HMAC-SHA256", input.amzDate, scope, sha256Hex(canonicalRequest)].join("\n");
  let key: Buffer = hmac(`AWS4${input.secretAccessKey}`, scopeDate);
  for (const part of [input.region, "s3", "aws4_request"]) key = hmac(key, part);
  return createHmac("sha256", key).update(stringToSign).digest("hex");
}

function canonicalUri(path: string): string {
  return (
    path
      .split("/")
      .map((segment) => awsEncode(decodeSegment(segment)))
      .join("/") || "/"
  );
}

function canonicalQuery(query: string): string {
  return query
    .split("&")
    .filter(Boolean)
    .map((pair) => {
      const at = pair.indexOf("=");
      const [name, value] = at < 0 ? [pair, ""] : [pair.slice(0, at), pair.slice(at + 1)];
      return [awsEncode(decodeSegment(name)), awsEncode(decodeSegment(value))] as const;
    })
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join("&");
}

function canonicalHeaderValue(value: string | null): string {
  return (value ?? "").trim().replace(/\s+/g, " ");
}

/** RFC 3986 unreserved characters stay, everything else is %XX (what encodeURIComponent leaves of !'()* too). */
function awsEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new S3Failure(400, "InvalidURI", "Couldn't parse the specified URI.");
  }
}

function parseAmzDate(text: string): number | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, s);
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac("sha256", key).update(data).digest();
}

function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

function etagOf(bytes: Uint8Array): string {
  return `"${createHash("md5").update(bytes).digest("hex")}"`;
}

function requestIdHeader(): Record<string, string> {
  return { "x-amz-request-id": crypto.randomUUID().replaceAll("-", "").slice(0, 16).toUpperCase() };
}

/** S3's XML error document; a HEAD answer has no body, only the status. */
function errorResponse(failure: S3Failure, method: string, key: string): Response {
  const headers = { "Content-Type": "application/xml", ...requestIdHeader() };
  if (method === "HEAD") return new Response(null, { status: failure.status, headers });
  const xml =
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${failure.code}</Code>` +
    `<Message>${escapeXml(failure.message)}</Message>${key ? `<Key>${escapeXml(key)}</Key>` : ""}</Error>`;
  return new Response(xml, { status: failure.status, headers });
}

function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}
