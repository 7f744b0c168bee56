# Connect Broker image. Builds the TypeScript once; runs the compiled service.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY migrations ./migrations
COPY views ./views
COPY public ./public
# The development tools file (config/dev-tools.yaml), for the compose file's development stack.
COPY config ./config
USER node
EXPOSE 8443
CMD ["node", "dist/main.js"]
