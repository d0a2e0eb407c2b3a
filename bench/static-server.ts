// The bare Bun static file server the app host is compared with: Bun.serve answering every GET with the file
// (`new Response(Bun.file(path))`: Content-Type from the extension, Content-Length, streamed from disk), nothing
// else. Prints `BENCH_READY {"url": …, "host": …}` once it listens.
import { MARKER } from "./children.ts";

const port = Number(process.env.PORT);
const file = process.env.BENCH_FILE;
if (!Number.isInteger(port) || port <= 0 || !file) {
  process.stderr.write("static-server: PORT and BENCH_FILE are required\n");
  process.exit(2);
}

const server = Bun.serve({ port, hostname: "127.0.0.1", fetch: () => new Response(Bun.file(file)) });
process.stdout.write(
  `${MARKER}READY ${JSON.stringify({ url: `http://127.0.0.1:${server.port}/`, host: `127.0.0.1:${server.port}` })}\n`,
);

const stop = async () => {
  await server.stop(true);
  process.exit(0);
};
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());
