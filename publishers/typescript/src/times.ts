/** The one text form of a moment (ISO 8601 in UTC, milliseconds, `Z`) and the ISO 8601 forms an envelope accepts. */

/** `moment` as `2026-12-07T10:00:00.000Z`, the form every publisher stamps. */
export function isoText(moment: Date): string {
  return moment.toISOString();
}

// A date and a time with a zone (`Z` or an offset); seconds and their fraction optional, as Python's
// datetime.fromisoformat reads them. A date alone, or a time without a zone, is not a moment.
const ZONED = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|z|[+-]\d{2}:?\d{2})$/;

/** An ISO 8601 date-time with a time zone as a `Date`, or `undefined` when `text` is not one. */
export function parseZoned(text: string): Date | undefined {
  const found = ZONED.exec(text);
  if (!found) {
    return undefined;
  }
  const [, year, month, day, hour, minute, second = "0", fraction = "", zone = "Z"] = found;
  const [y, mo, d, h, mi, s] = [year, month, day, hour, minute, second].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const utc = Date.UTC(y, mo - 1, d, h, mi, s, Number(`0.${fraction || "0"}`) * 1000);
  const probe = new Date(Date.UTC(y, mo - 1, d));
  if (probe.getUTCMonth() !== mo - 1 || probe.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) {
    return undefined;
  }
  if (zone === "Z" || zone === "z") {
    return new Date(utc);
  }
  const sign = zone.startsWith("-") ? -1 : 1;
  const digits = zone.slice(1).replace(":", "");
  const offsetMinutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2));
  if (offsetMinutes >= 24 * 60) {
    return undefined;
  }
  return new Date(utc - sign * offsetMinutes * 60_000);
}
