/**
 * Each job type's payload schema (`<job type>.schema.json`, JSON Schema draft 2020-12), checked with Ajv before
 * anything is sent, as the Python publisher checks it and the consumer would refuse it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import type { Problem } from "./errors.js";

const SUFFIX = ".schema.json";
/** The folders of an app's payload schemas, as the Python publisher reads them (path-delimiter separated). */
export const SCHEMA_DIRS_VARIABLE = "TIERED_JOBS_SCHEMA_DIRS";

/** A dotted path (`tags.1`, `to.email`) from Ajv's JSON Pointer, as the vectors name a field. */
function dotted(pointer: string): string[] {
  return pointer
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function problemOf(error: ErrorObject): Problem {
  const path = dotted(error.instancePath);
  // Ajv reports a missing or an extra property at the object; the vectors name the property itself.
  if (error.keyword === "required") path.push(String(error.params["missingProperty"]));
  if (error.keyword === "additionalProperties") path.push(String(error.params["additionalProperty"]));
  const where = path.length > 0 ? `payload field '${path.join(".")}'` : "payload";
  return {
    code: "payload_schema",
    keyword: error.keyword,
    path: path.join("."),
    message: `${where} ${error.message ?? "is not allowed"}`,
  };
}

/** The payload schemas of a set of job types: from folders of `<type>.schema.json` files, or given as objects. */
export class PayloadSchemas {
  private readonly ajv = new Ajv2020({
    allErrors: true, // every problem of a payload, as the Python publisher names them all
    strict: true,
    strictTypes: false, // `const` or `enum` without a `type` is fine in these schemas
    strictRequired: false,
    validateFormats: false, // `format` is an annotation in the consumer's subset
  });
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(schemas: Record<string, object> = {}) {
    for (const [jobType, schema] of Object.entries(schemas)) {
      this.compiled.set(jobType, this.ajv.compile(schema));
    }
  }

  /** Every `<type>.schema.json` of `folders` (an earlier folder wins), e.g. a copy of the job folder's `schemas/`. */
  static fromFolders(folders: readonly string[]): PayloadSchemas {
    const schemas: Record<string, object> = {};
    for (const folder of folders) {
      for (const name of readdirSync(folder).sort()) {
        const jobType = name.slice(0, -SUFFIX.length);
        if (name.endsWith(SUFFIX) && !(jobType in schemas)) {
          schemas[jobType] = JSON.parse(readFileSync(join(folder, name), "utf8")) as object;
        }
      }
    }
    return new PayloadSchemas(schemas);
  }

  /** From `TIERED_JOBS_SCHEMA_DIRS` (none set: no schema, so no payload is checked here). */
  static fromEnv(env: Record<string, string | undefined> = process.env): PayloadSchemas {
    const folders = (env[SCHEMA_DIRS_VARIABLE] ?? "").split(delimiter).filter((folder) => folder);
    return PayloadSchemas.fromFolders(folders);
  }

  /** The problems of `payload` against its type's schema; a type without one is not checked. */
  problems(jobType: string, payload: unknown): Problem[] {
    const check = this.compiled.get(jobType);
    if (check === undefined || check(payload)) {
      return [];
    }
    return (check.errors ?? []).map(problemOf);
  }
}
