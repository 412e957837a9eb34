/**
 * SQS's own rules for what a message may hold, as the Python contract states them
 * (tiered_jobs/contract/sqs_limits.py): the character set, the byte count, the batch limits.
 */

/** SQS's largest message, and the largest `SendMessageBatch` call (the sum of its messages). */
export const SQS_MAX_MESSAGE_BYTES = 1_048_576;
/** Bytes of a job's message left to the runtime's own attributes: a letter's reasons, a held copy's state. */
export const RUNTIME_ATTRIBUTES_HEADROOM_BYTES = 8 * 1024;
/** The largest job message a publisher sends: SQS's 1 MiB less the headroom, so a letter keeps its reasons. */
export const MAX_JOB_MESSAGE_BYTES = SQS_MAX_MESSAGE_BYTES - RUNTIME_ATTRIBUTES_HEADROOM_BYTES;
/** Entries of one `SendMessageBatch` call. */
export const SQS_MAX_BATCH_ENTRIES = 10;
/** SQS's longest `DelaySeconds`: a job due later goes through a one-time schedule (the Python publisher's). */
export const SQS_MAX_DELAY_SECONDS = 900;

/** The code points SQS accepts in a body (the W3C XML `Char` production). */
function allowed(codePoint: number): boolean {
  return (
    codePoint === 0x9 ||
    codePoint === 0xa ||
    codePoint === 0xd ||
    (codePoint >= 0x20 && codePoint <= 0xd7ff) ||
    (codePoint >= 0xe000 && codePoint <= 0xfffd) ||
    (codePoint >= 0x10000 && codePoint <= 0x10ffff)
  );
}

/** Where SQS would refuse a text: the first refused character, counted in code points as every port counts. */
export interface RefusedCharacter {
  index: number;
  codePoint: string;
}

/** The first character SQS refuses in `text` (a lone surrogate is one), or `undefined` if it has none. */
export function firstRefusedCharacter(text: string): RefusedCharacter | undefined {
  let index = 0;
  // A string's iterator walks code points and yields a lone surrogate on its own.
  for (const character of text) {
    const codePoint = character.codePointAt(0) ?? 0;
    if (!allowed(codePoint)) {
      return { index, codePoint: `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}` };
    }
    index += 1;
  }
  return undefined;
}

/** UTF-8 bytes of `text`; a lone surrogate counts its 3 bytes, as Python's "surrogatepass" does. */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (const character of text) {
    const codePoint = character.codePointAt(0) ?? 0;
    bytes += codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
  }
  return bytes;
}

/** A message attribute as `SendMessage` takes it. */
export interface MessageAttribute {
  DataType: string;
  StringValue?: string;
  BinaryValue?: Uint8Array;
}

/** The bytes SQS counts for one message: its body plus every attribute's name, data type and value. */
export function messageSize(body: string, attributes: Record<string, MessageAttribute> = {}): number {
  let size = utf8Bytes(body);
  for (const [name, value] of Object.entries(attributes)) {
    size += utf8Bytes(name) + utf8Bytes(value.DataType);
    if (value.StringValue !== undefined) {
      size += utf8Bytes(value.StringValue);
    } else if (value.BinaryValue !== undefined) {
      size += value.BinaryValue.byteLength;
    }
  }
  return size;
}

/** Greedy `SendMessageBatch` chunks, in order: at most 10 items and 1 MiB in all. */
export function packBatches<T>(
  items: readonly T[],
  sizeOf: (item: T) => number,
  maxEntries = SQS_MAX_BATCH_ENTRIES,
  maxBytes = SQS_MAX_MESSAGE_BYTES,
): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let total = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (chunk.length > 0 && (chunk.length === maxEntries || total + size > maxBytes)) {
      chunks.push(chunk);
      chunk = [];
      total = 0;
    }
    chunk.push(item);
    total += size;
  }
  if (chunk.length > 0) {
    chunks.push(chunk);
  }
  return chunks;
}
