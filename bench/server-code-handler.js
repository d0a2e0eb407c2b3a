// The handler the server-code bench runs, the same file in the sandbox (through the app host) and natively in Bun.
// A hello world, and a list of 20 documents through env.db.
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/api/hello") return new Response("Hello, world!");
    if (url.pathname === "/api/items") return Response.json(await env.db("items").list({ limit: 20 }));
    return new Response("not found", { status: 404 });
  },
};
