/**
 * Envelope v1, the JSON object every job message carries: its rules as tiered_jobs/contract/envelope.py
 * states them (and envelope.schema.json beside it), its body's one JSON form, and a consumer's parse.
 */
import { firstRefusedCharacter, SQS_MAX_MESSAGE_BYTES, utf8Bytes } from "./limits.js";
import type { Problem } from "./errors.js";
import { parseZoned } from "./times.js";

export const ENVELOPE_VERSION = 1;
export const MAX_JOB_TYPE_CHARS = 128;
export const MAX_IDEMPOTENCY_KEY_CHARS = 256;
const JOB_TYPE_PATTERN = /^[a-z0-9_]+(\.[a-z0-9_]+)*$/;
// A MessageGroupId: letters, digits and ASCII punctuation, which is every printable ASCII character but space.
const TENANT_PATTERN = /^[\x21-\x7e]{1,128}$/;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_CHAIN_LINKS = 50;
/** A job's tags (tiered_jobs/contract/tags.py): at most 10, a Logs Insights field name each, short values. */
export const MAX_TAGS = 10;
const TAG_NAME_PATTERN = /^[a-z][a-z0-9_]{0,31}$/;
const TAG_VALUE_PATTERN = /^[A-Za-z0-9_.:/@+=#-]{1,64}$/;
const REQUIRED_FIELDS = ["type", "idempotency_key", "payload"] as const;
/** Every field in the body's order: a port sends them in this order so bodies compare byte for byte. */
export const ALLOWED_FIELDS = [
  ...REQUIRED_FIELDS,
  "version",
  "published_at",
  "tenant",
  "unique_lock",
  "expires_at",
  "batch",
  "tags",
] as const;

/** One job as it travels in a message body. */
export interface Envelope {
  type: string;
  idempotency_key: string;
  payload: Record<string, unknown>;
  version: number;
  published_at?: string;
  tenant?: string;
  unique_lock?: string;
  expires_at?: string;
  batch?: { id: string; step?: number };
  tags?: Record<string, string>;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function invalid(field: string, message: string): Problem {
  return { code: "invalid_field", field, message };
}

function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** Why `tenant` cannot be a `MessageGroupId` (an empty list when it can). */
export function tenantProblems(tenant: unknown): Problem[] {
  if (typeof tenant === "string" && TENANT_PATTERN.test(tenant)) {
    return [];
  }
  return [
    invalid(
      "tenant",
      "'tenant' must be 1-128 characters, each a letter, a digit or ASCII punctuation (what SQS accepts as a " +
        `MessageGroupId; no spaces), got ${JSON.stringify(tenant)}`,
    ),
  ];
}

/** Why `tags` are not a job's tags (an empty list when they are). */
export function tagProblems(tags: unknown): Problem[] {
  if (!isObject(tags)) {
    return [invalid("tags", `'tags' must be an object of tag names to values, got ${kind(tags)}`)];
  }
  const problems: Problem[] = [];
  const entries = Object.entries(tags);
  if (entries.length > MAX_TAGS) {
    problems.push(invalid("tags", `'tags' must hold at most ${MAX_TAGS} tags, got ${entries.length}`));
  }
  for (const [name, value] of entries) {
    if (!TAG_NAME_PATTERN.test(name)) {
      problems.push(
        invalid(
          "tags",
          `'tags' must name each tag with 1-32 lower-case letters, digits or '_', starting with a letter, got ${JSON.stringify(name)}`,
        ),
      );
    } else if (typeof value !== "string" || !TAG_VALUE_PATTERN.test(value)) {
      problems.push(
        invalid(
          `tags.${name}`,
          `'tags.${name}' must be a string of 1-64 letters, digits or - _ . : / @ + = # (no spaces, quotes or ` +
            `backslashes), got ${JSON.stringify(value)}`,
        ),
      );
    }
  }
  return problems;
}

function batchProblems(value: unknown): Problem[] {
  if (!isObject(value)) {
    return [invalid("batch", `'batch' must be an object {"id": ..., "step": ...}, got ${kind(value)}`)];
  }
  const problems: Problem[] = [];
  const unknown = Object.keys(value).filter((name) => name !== "id" && name !== "step");
  if (unknown.length > 0) {
    problems.push(invalid("batch", `'batch' has unknown field(s) ${unknown.join(", ")}; allowed: 'id', 'step'`));
  }
  if (typeof value["id"] !== "string" || !TOKEN_PATTERN.test(value["id"])) {
    problems.push(invalid("batch.id", "'batch.id' must be 1-64 letters, digits, '-' or '_'"));
  }
  if ("step" in value) {
    const step = value["step"];
    if (typeof step !== "number" || !Number.isInteger(step) || step < 0 || step >= MAX_CHAIN_LINKS) {
      problems.push(invalid("batch.step", `'batch.step' must be an integer 0-${MAX_CHAIN_LINKS - 1}`));
    }
  }
  return problems;
}

/** Every problem of `obj` as an envelope v1 (an empty list when it is valid). */
export function validate(obj: unknown): Problem[] {
  if (!isObject(obj)) {
    return [{ code: "not_an_object", message: `the body must be a JSON object, got ${kind(obj)}` }];
  }
  const problems: Problem[] = [];
  for (const name of REQUIRED_FIELDS) {
    if (!(name in obj)) {
      problems.push({ code: "missing_field", field: name, message: `missing required field '${name}'` });
    }
  }
  for (const name of Object.keys(obj).sort()) {
    if (!(ALLOWED_FIELDS as readonly string[]).includes(name)) {
      problems.push({
        code: "unknown_field",
        field: name,
        message: `unknown field '${name}'; allowed: ${ALLOWED_FIELDS.join(", ")}`,
      });
    }
  }
  if ("type" in obj) {
    const type = obj["type"];
    if (typeof type !== "string" || [...type].length > MAX_JOB_TYPE_CHARS || !JOB_TYPE_PATTERN.test(type)) {
      problems.push(
        invalid(
          "type",
          `'type' must be a string matching ${JOB_TYPE_PATTERN.source} of at most ${MAX_JOB_TYPE_CHARS} characters, ` +
            `got ${typeof type === "string" ? JSON.stringify(type.slice(0, 80)) : kind(type)}`,
        ),
      );
    }
  }
  if ("idempotency_key" in obj) {
    const key = obj["idempotency_key"];
    const length = typeof key === "string" ? [...key].length : -1;
    if (length < 1 || length > MAX_IDEMPOTENCY_KEY_CHARS) {
      problems.push(
        invalid(
          "idempotency_key",
          `'idempotency_key' must be a string of 1-${MAX_IDEMPOTENCY_KEY_CHARS} characters, got ` +
            (length < 0 ? kind(key) : `${length}`),
        ),
      );
    }
  }
  if ("payload" in obj && !isObject(obj["payload"])) {
    problems.push(invalid("payload", `'payload' must be a JSON object, got ${kind(obj["payload"])}`));
  }
  if ("version" in obj && obj["version"] !== ENVELOPE_VERSION) {
    problems.push(invalid("version", `'version' must be ${ENVELOPE_VERSION}, got ${JSON.stringify(obj["version"])}`));
  }
  for (const name of ["published_at", "expires_at"] as const) {
    if (name in obj) {
      const value = obj[name];
      if (typeof value !== "string" || parseZoned(value) === undefined) {
        problems.push(
          invalid(name, `'${name}' must be an ISO 8601 date-time with a time zone, got ${JSON.stringify(value)}`),
        );
      }
    }
  }
  if ("tenant" in obj) {
    problems.push(...tenantProblems(obj["tenant"]));
  }
  if ("unique_lock" in obj) {
    const token = obj["unique_lock"];
    if (typeof token !== "string" || !TOKEN_PATTERN.test(token)) {
      problems.push(invalid("unique_lock", "'unique_lock' must be 1-64 letters, digits, '-' or '_'"));
    }
  }
  if ("batch" in obj) {
    problems.push(...batchProblems(obj["batch"]));
  }
  if ("tags" in obj) {
    problems.push(...tagProblems(obj["tags"]));
  }
  return problems;
}

/**
 * Is `obj` an envelope a newer release wrote, rather than a malformed one? A version above 1, or fields
 * this release does not know, while every field it knows keeps its rules (docs/upgrading.md).
 */
export function newerThanKnown(obj: unknown): boolean {
  if (!isObject(obj)) {
    return false;
  }
  const version = obj["version"] ?? ENVELOPE_VERSION;
  if (typeof version !== "number" || !Number.isInteger(version) || version < ENVELOPE_VERSION) {
    return false;
  }
  const known = Object.fromEntries(
    Object.entries(obj).filter(([name]) => (ALLOWED_FIELDS as readonly string[]).includes(name) && name !== "version"),
  );
  if (version === ENVELOPE_VERSION && Object.keys(known).length === Object.keys(obj).length - ("version" in obj ? 1 : 0)) {
    return false;
  }
  return validate(known).length === 0;
}

/** Every string of `value` (keys included) holding a character SQS refuses: one problem per string, its first. */
export function characterProblems(value: unknown, where: string): Problem[] {
  if (typeof value === "string") {
    const refused = firstRefusedCharacter(value);
    return refused
      ? [
          {
            code: "refused_character",
            field: where,
            index: refused.index,
            codePoint: refused.codePoint,
            message: `${where} holds ${refused.codePoint} at character ${refused.index}, which SQS does not accept in a message`,
          },
        ]
      : [];
  }
  if (Array.isArray(value)) {
    return value.flatMap((item, position) => characterProblems(item, `${where}[${position}]`));
  }
  if (isObject(value)) {
    return Object.entries(value).flatMap(([name, item]) => [
      ...characterProblems(name, `the key ${where}[${JSON.stringify(name)}]`),
      ...characterProblems(item, `${where}[${JSON.stringify(name)}]`),
    ]);
  }
  return [];
}

/** The message body: compact JSON, the fields in their one order, characters other than JSON's escapes as themselves. */
export function toJson(envelope: Envelope): string {
  const ordered: Json = {};
  for (const name of ALLOWED_FIELDS) {
    if (envelope[name] !== undefined) {
      ordered[name] = envelope[name];
    }
  }
  return JSON.stringify(ordered);
}

/** A valid envelope to publish, or the problems of each field, SQS's character set included. */
export function build(fields: Omit<Envelope, "version">): { envelope?: Envelope; problems: Problem[] } {
  const envelope: Envelope = { ...fields, version: ENVELOPE_VERSION };
  for (const name of ALLOWED_FIELDS) {
    if (envelope[name] === undefined) {
      delete envelope[name];
    }
  }
  const problems = [
    ...validate(envelope),
    ...characterProblems(envelope.type, "'type'"),
    ...characterProblems(envelope.idempotency_key, "'idempotency_key'"),
    ...characterProblems(envelope.payload, "payload"),
  ];
  return problems.length > 0 ? { problems } : { envelope, problems };
}

/** Why a body is not a job this release runs: `kind` is the vectors' error, `problems` each rule broken. */
export class EnvelopeError extends Error {
  constructor(
    readonly kind: "not_json" | "body_too_large" | "envelope_invalid" | "envelope_too_new",
    readonly problems: Problem[],
  ) {
    super(`invalid job envelope (${kind}): ${problems.map((problem) => problem.message).join("; ")}`);
    this.name = "EnvelopeError";
  }
}

/** A consumer's parse of a message body, as the Python consumer reads it: the envelope, or {@link EnvelopeError}. */
export function parse(body: string): Envelope {
  const size = utf8Bytes(body);
  if (size > SQS_MAX_MESSAGE_BYTES) {
    throw new EnvelopeError("body_too_large", [
      { code: "invalid_field", message: `the body is ${size} bytes, over the ${SQS_MAX_MESSAGE_BYTES}-byte limit` },
    ]);
  }
  let obj: unknown;
  try {
    obj = JSON.parse(body);
  } catch (error) {
    throw new EnvelopeError("not_json", [
      { code: "invalid_field", message: `the body is not JSON (${(error as Error).message})` },
    ]);
  }
  const problems = validate(obj);
  if (problems.length > 0) {
    throw new EnvelopeError(newerThanKnown(obj) ? "envelope_too_new" : "envelope_invalid", problems);
  }
  return { version: ENVELOPE_VERSION, ...(obj as Omit<Envelope, "version">) };
}
