/**
 * The X-Ray trace header a job's message carries as its `AWSTraceHeader` system attribute: an X-Ray header
 * as given, or a W3C `traceparent` converted as OpenTelemetry's X-Ray propagator does (contract/trace_header.py).
 */

const ROOT = /^1-[0-9a-f]{8}-[0-9a-f]{24}$/;
const PART = /^[A-Za-z][A-Za-z0-9]*=[\x21-\x3a\x3c-\x7e]*$/; // printable ASCII, no ';' or space
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

function parts(header: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const part of header.split(";")) {
    const text = part.trim();
    const equals = text.indexOf("=");
    if (equals >= 0 && !found.has(text.slice(0, equals))) {
      found.set(text.slice(0, equals), text.slice(equals + 1));
    }
  }
  return found;
}

/** An X-Ray header from `value` (an X-Ray header or a W3C traceparent), or `undefined` when SQS would refuse it. */
export function normalise(value: string): string | undefined {
  // Python's str.strip and JavaScript's trim both take Unicode white space.
  const text = value.trim();
  const w3c = TRACEPARENT.exec(text);
  if (w3c) {
    const [, traceId = "", spanId = "", flags = "00"] = w3c;
    const sampled = Number.parseInt(flags, 16) & 1;
    return `Root=1-${traceId.slice(0, 8)}-${traceId.slice(8)};Parent=${spanId};Sampled=${sampled}`;
  }
  const pieces = text
    .split(";")
    .map((piece) => piece.trim())
    .filter((piece) => piece);
  if (!pieces.every((piece) => PART.test(piece)) || !ROOT.test(parts(text).get("Root") ?? "")) {
    return undefined;
  }
  return pieces.join(";");
}

/** The problem's sentence for a header {@link normalise} refused. */
export function traceHeaderProblem(value: string): string {
  return (
    `traceHeader ${JSON.stringify(value.slice(0, 80))} is not an X-Ray trace header (Root=1-<8 hex>-<24 hex>;` +
    "Parent=<16 hex>;Sampled=<0|1>) nor a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>); pass the header of the " +
    "current request, or leave it out"
  );
}
