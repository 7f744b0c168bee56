# Connect Broker image: two targets from one file.
#   docker build .                        production (the default, last stage): the compiled service on a
#                                         production install (no devDependencies), as the user node.
#   docker build --target development .   the development stack (docker-compose.yml): the TypeScript
#                                         source through tsx on a full install, development servers included.
# `npm run image:build -- <dir> [--target <stage>]` (scripts/imageBuild.mjs) performs these same steps
# without Docker, so CI proves them: keep to FROM, WORKDIR, COPY [--from], RUN (plain shell, paths
# relative to WORKDIR), ENV, USER, EXPOSE, HEALTHCHECK and CMD, which it knows; it refuses anything else.

# The compiler's stage: a full install, then dist/.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# The development stack: src/main.ts through tsx, the development servers (identity provider, demo
# services, upstream MCP server) on PORT+1 to PORT+4. DATABASE_URL names the compose file's Postgres.
FROM build AS development
ENV NODE_ENV=development DATA_DIR=/data
COPY bin ./bin
COPY migrations ./migrations
COPY views ./views
COPY public ./public
COPY config ./config
# DATA_DIR, owned by the user the service runs as: a new volume mounted there takes this owner, so the
# service can write to it (the generated CA, development keys and sessions); the code stays root's.
WORKDIR /
RUN mkdir data && chown node:node data
WORKDIR /app
USER node
EXPOSE 8443 8444 8445 8446 8447
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=12 CMD ["node", "bin/healthcheck.js"]
CMD ["node", "--import", "tsx", "src/main.ts"]

# A production install: dependencies only, so whatever production code imports must be there.
FROM node:20-bookworm-slim AS production-dependencies
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

# The service: compiled code on the production install.
FROM node:20-bookworm-slim AS production
ENV NODE_ENV=production DATA_DIR=/data
WORKDIR /app
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY migrations ./migrations
COPY views ./views
COPY public ./public
# The starter tools and the URL classifier's protected domains (config/starter-tools, protected-domains.txt).
COPY config ./config
# DATA_DIR, owned by the user the service runs as (as in development above): the run lock lives there.
WORKDIR /
RUN mkdir data && chown node:node data
WORKDIR /app
USER node
EXPOSE 8443
# GET /readyz through the broker's own settings (bin/healthcheck.js): PORT, TLS_CA_FILE, PUBLIC_URL.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["node", "bin/healthcheck.js"]
CMD ["node", "dist/main.js"]
