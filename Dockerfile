# Deputy worker image: `docker compose up` builds it from this repository.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
ENV TEMPORAL_ADDRESS=temporal:7233 \
    DEPUTY_CONFIG=/app/deputy.config.yaml
CMD ["npm", "run", "worker"]
