# Deputy worker image: `docker compose up` builds it from this repository. It runs compiled JavaScript: the build
# stage compiles with the dev dependencies, the image keeps only the runtime ones.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src src
COPY workflows workflows
COPY activities activities
RUN npm run build

FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts
COPY --from=build /app/dist dist
COPY deputy.config.yaml ./
ENV NODE_ENV=production \
    TEMPORAL_ADDRESS=temporal:7233 \
    DEPUTY_CONFIG=/app/deputy.config.yaml
CMD ["node", "dist/src/worker/main.js"]
