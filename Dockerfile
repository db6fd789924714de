# The image docker-compose.yml builds: chronomad on Node 20, run through tsx
# exactly as `npm start` runs it.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY bin ./bin
COPY src ./src
COPY streams ./streams
COPY projections ./projections
ENV CHRONOMAD_DATA_DIR=/data
VOLUME /data
EXPOSE 4646
ENTRYPOINT ["node", "--max-semi-space-size=32", "bin/chronomad.js"]
CMD ["serve", "--http-addr", "0.0.0.0:4646"]
