# fraudlink container image.
#
#   docker build -t fraudlink .
#   docker run --rm fraudlink --help
#   docker run --rm -e API_BASE_URL=... -e API_KEY=... -e KAFKA_BROKERS=... -e SCHEMA_REGISTRY_URL=... fraudlink connector
#
# The image's command is the `fraudlink` CLI: the first argument is the subcommand (connector,
# verifier, replay, sandbox, api). Configuration comes from environment variables (docs/operations.md).
# `npm run image:check` assembles the runtime stage's layout without Docker and runs it against a
# local Kafka + schema registry; keep the two in step (test/ship/dockerfile.test.ts checks the steps).

# Base images as arguments, so a release build can pin them by digest (`--build-arg RUNTIME_IMAGE=...@sha256:...`).
ARG BUILD_IMAGE=node:24-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot

# --- build: compile TypeScript with the dev dependencies -------------------------------------------
FROM ${BUILD_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# The `node` dev dependency downloads a second Node 24 for npm scripts on machines whose own node is
# older; this base image already is Node 24. Biome (the linter) is not needed to compile, and the
# lockfile lacks its other platforms' optional binaries, which `npm ci` would otherwise insist on.
# --ignore-scripts: `prepare` would compile before the sources are copied; the build runs below.
RUN npm pkg delete devDependencies.node devDependencies.@biomejs/biome \
  && npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# --- deps: production dependencies only, exactly as locked -----------------------------------------
FROM ${BUILD_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Without the devDependencies key, `npm ci` installs the locked production tree and does not ask for
# dev-only packages; no production dependency needs an install script.
RUN npm pkg delete devDependencies \
  && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && npm cache clean --force

# --- runtime: distroless Node 24, no shell, no package manager --------------------------------------
FROM ${RUNTIME_IMAGE} AS runtime
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="fraudlink" \
  org.opencontainers.image.description="Exactly-once bridge between a PSP fraud-alert / Verification-of-Payee service and Apache Kafka" \
  org.opencontainers.image.licenses="Apache-2.0" \
  org.opencontainers.image.version="${VERSION}"
WORKDIR /app
COPY --from=deps /app/package.json ./package.json
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY schemas ./schemas
COPY bin ./bin
# Numeric (distroless's `nonroot`), so Kubernetes can verify runAsNonRoot without reading /etc/passwd.
# Files stay owned by root: the process can read but not change its own code.
USER 65532:65532
# /metrics, /healthz and /readyz (HTTP_PORT).
EXPOSE 9464
# glibc serves allocations of 128 KiB and more with mmap and returns them at free. By default it
# raises that threshold up to 32 MiB as large blocks are freed, after which the connector's page and
# request buffers (hundreds of kB each) came from the heap and stayed resident: peak RSS at 1,000,000
# rows 340 -> 309 MB (heap 62 -> 24 MB), no CPU cost measured (README, Benchmarks).
ENV MALLOC_MMAP_THRESHOLD_=131072
# Node runs as PID 1 with no init: fraudlink installs its own SIGTERM/SIGINT handlers (the kernel
# gives PID 1 no default ones) and starts no child processes, so there is nothing to reap.
# --max-semi-space-size=4: V8 otherwise sizes the young generation from the host's memory (134 MB on
# a 23 GB node, whatever the pod's limit); 8 MB semi-spaces cut the connector's peak RSS by ~180 MB
# at 1,000,000 rows, 4 MB another ~20 MB (309-317 -> 290-307 MB), with no throughput lost; 2 MB
# promoted so much that RSS grew again (README, Benchmarks). A worker thread sets its own.
ENTRYPOINT ["/nodejs/bin/node", "--enable-source-maps", "--max-semi-space-size=4", "/app/bin/fraudlink.js"]
CMD ["--help"]
