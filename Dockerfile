FROM oven/bun:1.4.5
WORKDIR /app
COPY . .
RUN bun install --frozen-lockfile --production
USER bun
