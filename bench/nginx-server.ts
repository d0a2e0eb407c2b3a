// nginx (the Debian package) serving the same file, the app host's anchor: one worker process
// (`worker_processes 1`), access log off, sendfile, keep-alive without a request cap. Prints
// `BENCH_READY {"url": …, "host": …}` once it answers. Needs `nginx` on PATH (apt-get install nginx).
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { MARKER } from "./children.ts";

const port = Number(process.env.PORT);
const file = process.env.BENCH_FILE;
if (!Number.isInteger(port) || port <= 0 || !file) {
  process.stderr.write("nginx-server: PORT and BENCH_FILE are required\n");
  process.exit(2);
}
const binary = Bun.which("nginx") ?? (Bun.file("/usr/sbin/nginx").size > 0 ? "/usr/sbin/nginx" : null);
if (!binary) {
  process.stderr.write("nginx-server: nginx is not installed (apt-get install nginx)\n");
  process.exit(3);
}

const dir = mkdtempSync(join(tmpdir(), "hatch-bench-nginx-"));
for (const sub of ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]) mkdirSync(join(dir, sub));
// The worker runs as nobody when started as root: it must read the file's folder.
chmodSync(dirname(file), 0o755);
const conf = join(dir, "nginx.conf");
writeFileSync(
  conf,
  `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 10000000;
  keepalive_timeout 65;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${dirname(file)};
    location / { try_files /${file.split("/").pop()} =404; }
  }
}
`,
);
const nginx = Bun.spawn([binary, "-p", dir, "-c", conf], { stdout: "inherit", stderr: "inherit" });
const url = `http://127.0.0.1:${port}/`;
for (let i = 0; ; i++) {
  try {
    if ((await fetch(url)).ok) break;
  } catch {
    // Not listening yet.
  }
  if (nginx.exitCode !== null || i > 100) {
    process.stderr.write(`nginx-server: nginx did not start (exit ${nginx.exitCode})\n`);
    rmSync(dir, { recursive: true, force: true });
    process.exit(1);
  }
  await Bun.sleep(50);
}
process.stdout.write(`${MARKER}READY ${JSON.stringify({ url, host: `127.0.0.1:${port}` })}\n`);

const stop = async () => {
  nginx.kill("SIGQUIT");
  await nginx.exited;
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
};
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());
