// Publishes jobs from Node through @tiered-jobs/publisher, for the local-mode test of the TypeScript publisher.
// argv[2]: the built package's index.js; argv[3]: JSON {"stage"?: ..., "jobs": [...]} (no stage: discovery from
// the environment's TIERED_JOBS_* variables). The SDK's clients find the embedded AWS through AWS_ENDPOINT_URL.
// Prints the results as JSON, or the error's name, message and problems (exit status 1).
const [modulePath, request] = process.argv.slice(2);
const { Publisher } = await import(modulePath);
const { stage, jobs } = JSON.parse(request);
try {
  const publisher = stage ? await Publisher.fromStage(stage, { traceContext: null }) : Publisher.fromEnv({ traceContext: null });
  console.log(JSON.stringify(await publisher.publishBatch(jobs)));
} catch (error) {
  console.log(JSON.stringify({ error: error.name, message: error.message, problems: error.problems ?? [] }));
  process.exitCode = 1;
}
