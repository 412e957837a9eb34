/**
 * Finding a stage's queues and routes without copied URLs, from the sources the Python publisher reads
 * (tiered_jobs/stage/discovery.py): the environment, or the SSM parameters the stack writes under
 * `/tiered-jobs/<stage>/`.
 */
import { DiscoveryError } from "./errors.js";
import { Routes } from "./routing.js";

/** Where one stage's jobs go. */
export interface Deployment {
  /** Each tier's queue URL, by tier name. */
  queues: Record<string, string>;
  routes: Routes;
  /** Where it was found, for messages (`environment`, `SSM /tiered-jobs/dev`). */
  source: string;
}

/** The variables a publisher reads: `TIERED_JOBS_QUEUE_URL_<TIER>` (`BULK_EU` is tier `bulk-eu`) and the routes. */
export const QUEUE_URL_VARIABLE_PREFIX = "TIERED_JOBS_QUEUE_URL_";
export const ROUTES_VARIABLE = "TIERED_JOBS_ROUTES";

/** The stage's SSM parameter names, as the stack writes them (contract/names.py, `Ssm`). */
export const ssmNames = {
  tiers: (stage: string) => `/tiered-jobs/${stage}/tiers`,
  routes: (stage: string) => `/tiered-jobs/${stage}/routes`,
  queueUrl: (stage: string, tier: string) => `/tiered-jobs/${stage}/tiers/${tier}/queue-url`,
};

// GetParameters takes at most 10 names a call.
const SSM_MAX_NAMES = 10;

function parseRoutes(text: string, source: string): Routes {
  try {
    return new Routes(JSON.parse(text) as Record<string, string>);
  } catch (error) {
    throw new DiscoveryError(
      `routes in ${source} are not a JSON object of {job type glob: tier}: ${(error as Error).message}`,
    );
  }
}

/** From `TIERED_JOBS_QUEUE_URL_<TIER>` and `TIERED_JOBS_ROUTES`: no AWS call (without routes, every publish names its tier). */
export function fromEnv(env: Record<string, string | undefined> = process.env): Deployment {
  const queues: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith(QUEUE_URL_VARIABLE_PREFIX) && name.length > QUEUE_URL_VARIABLE_PREFIX.length && value) {
      queues[name.slice(QUEUE_URL_VARIABLE_PREFIX.length).toLowerCase().replace(/_/g, "-")] = value;
    }
  }
  if (Object.keys(queues).length === 0) {
    throw new DiscoveryError(`no queue URLs in the environment: set ${QUEUE_URL_VARIABLE_PREFIX}<TIER> for each tier`);
  }
  const routes = env[ROUTES_VARIABLE];
  return {
    queues,
    routes: routes === undefined ? new Routes({}) : parseRoutes(routes, `$${ROUTES_VARIABLE}`),
    source: "environment",
  };
}

/** What discovery asks of an SSM client: the SDK v3 `SSMClient` has it. */
export interface SsmSender {
  send(command: object): Promise<{ Parameters?: { Name?: string; Value?: string }[] }>;
}

async function getParameters(ssm: SsmSender, names: string[]): Promise<Map<string, string>> {
  // The SSM client is an optional peer dependency: only a publisher built from a stage loads it.
  const { GetParametersCommand } = await import("@aws-sdk/client-ssm");
  const found = new Map<string, string>();
  for (let start = 0; start < names.length; start += SSM_MAX_NAMES) {
    const answer = await ssm.send(new GetParametersCommand({ Names: names.slice(start, start + SSM_MAX_NAMES) }));
    for (const parameter of answer.Parameters ?? []) {
      if (parameter.Name !== undefined && parameter.Value !== undefined) {
        found.set(parameter.Name, parameter.Value);
      }
    }
  }
  return found;
}

/** From the SSM parameters the stack writes for `stage` (needs `ssm:GetParameters`; the publisher policy grants it). */
export async function fromStage(stage: string, ssm?: SsmSender): Promise<Deployment> {
  let client = ssm;
  if (client === undefined) {
    const { SSMClient } = await import("@aws-sdk/client-ssm");
    client = new SSMClient({});
  }
  const head = await getParameters(client, [ssmNames.tiers(stage), ssmNames.routes(stage)]);
  const tierList = head.get(ssmNames.tiers(stage));
  if (tierList === undefined) {
    throw new DiscoveryError(
      `SSM parameter ${ssmNames.tiers(stage)} not found: is stage ${JSON.stringify(stage)} deployed in this account and region?`,
    );
  }
  const routes = head.get(ssmNames.routes(stage));
  if (routes === undefined) {
    throw new DiscoveryError(`SSM parameter ${ssmNames.routes(stage)} not found`);
  }
  const tiers = tierList
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name);
  const urls = await getParameters(
    client,
    tiers.map((tier) => ssmNames.queueUrl(stage, tier)),
  );
  const queues: Record<string, string> = {};
  for (const tier of tiers) {
    const url = urls.get(ssmNames.queueUrl(stage, tier));
    if (url === undefined) {
      throw new DiscoveryError(`SSM parameter ${ssmNames.queueUrl(stage, tier)} not found`);
    }
    queues[tier] = url;
  }
  return { queues, routes: parseRoutes(routes, ssmNames.routes(stage)), source: `SSM /tiered-jobs/${stage}` };
}
