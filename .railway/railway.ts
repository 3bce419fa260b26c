// Guard on Railway, as infrastructure as code (read by Railway from .railway/railway.ts).
//
// One service built from deploy/Dockerfile, one volume at /data for the SQLite database and the
// audit chain, health from /healthz. Secrets are never written here: preserve() keeps whatever
// value the variable already has in the Railway environment (set it in the dashboard or with
// `railway variables --set`). Type-check: cd .railway && npm ci && npx tsc --noEmit
import { defineRailway, preserve, project, service, volume } from "railway/iac";

export default defineRailway(() => {
  const guard = service("guard", {
    build: { builder: "DOCKERFILE", dockerfilePath: "deploy/Dockerfile" },
    deploy: {
      healthcheckPath: "/healthz",
      healthcheckTimeout: 300,
      restartPolicyType: "ON_FAILURE",
      restartPolicyMaxRetries: 10,
      numReplicas: 1, // one writer for the SQLite file; Railway allows no replicas with a volume
    },
    volumeMounts: { "/data": volume("guard-data") },
    env: {
      GUARD_DATA_DIR: "/data", // the volume (Railway also sets RAILWAY_VOLUME_MOUNT_PATH)
      GUARD_LOG_FORMAT: "json",
      // Railway mounts volumes owned by root; the image runs as the unprivileged user `guard`,
      // which could not write /data. There is no Docker socket on Railway (see docs/DEPLOY.md).
      RAILWAY_RUN_UID: "0",
      GUARD_RAILWAY__PROJECT_TOKEN: preserve(),
      GUARD_TELEGRAM__BOT_TOKEN: preserve(),
      GUARD_TELEGRAM__CHAT_ID: preserve(),
      GUARD_LLM__API_KEY: preserve(),
    },
  });
  return project("guard", { resources: [guard] });
});
