// A stand-in for another service's HTTP API that an app declares in service.json `apis`, on a real port. It records
// every request as it arrived and answers by path:
//   /echo…      200 JSON of what it received (method, path, query, headers, body): echoes the secret back
//   /big        200 with `bigBytes` bytes
//   /slow       answers only when the test calls release() (or the caller gives up)
//   /redirect   302 to `location`
//   /status/N   status N with a small JSON body and a Set-Cookie the caller must not pass on
//   anything else 404

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: string;
}

export interface FakeApi {
  /** e.g. http://127.0.0.1:40123 */
  origin: string;
  readonly requests: RecordedRequest[];
  bigBytes: number;
  location: string;
  /** Answers every request waiting on /slow. */
  release(): void;
  stop(): Promise<void>;
}

export function startFakeApi(): FakeApi {
  const requests: RecordedRequest[] = [];
  let waiting: Array<() => void> = [];
  const state = { bigBytes: 1024, location: "https://elsewhere.example/" };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const url = new URL(request.url);
      const recorded: RecordedRequest = {
        method: request.method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: Object.fromEntries(request.headers),
        body: await request.text(),
      };
      requests.push(recorded);
      const path = url.pathname.replace(/^\/v1/, "");
      if (path.startsWith("/echo"))
        return Response.json(
          { ...recorded, url: request.url },
          {
            headers: {
              "X-Echo-Auth": recorded.headers.authorization ?? "",
              "X-RateLimit-Remaining": "41",
              "Set-Cookie": "api=1",
            },
          },
        );
      if (path === "/big")
        return new Response("x".repeat(state.bigBytes), { headers: { "Content-Type": "text/plain" } });
      if (path === "/slow") {
        await new Promise<void>((resolve) => waiting.push(resolve));
        return new Response("late");
      }
      if (path === "/redirect") return new Response(null, { status: 302, headers: { Location: state.location } });
      const status = /^\/status\/(\d{3})$/.exec(path);
      if (status)
        return Response.json(
          { error: "from the API" },
          { status: Number(status[1]), headers: { "Set-Cookie": "api=1", "Retry-After": "7" } },
        );
      return new Response("not here", { status: 404 });
    },
  });
  return {
    origin: `http://127.0.0.1:${server.port}`,
    requests,
    get bigBytes() {
      return state.bigBytes;
    },
    set bigBytes(value: number) {
      state.bigBytes = value;
    },
    get location() {
      return state.location;
    },
    set location(value: string) {
      state.location = value;
    },
    release() {
      for (const resolve of waiting) resolve();
      waiting = [];
    },
    async stop() {
      this.release();
      await server.stop(true);
    },
  };
}
