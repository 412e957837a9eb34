/**
 * The job-type -> tier routing table (`routes` in cdk.json): an exact type wins, else the longest matching
 * shell-style glob (`*` crosses dots, `?` one character, `[abc]` and `[!abc]` classes), ties in code-point order.
 */
import type { Problem } from "./errors.js";

function isGlob(pattern: string): boolean {
  return /[*?[]/.test(pattern);
}

/** A shell-style glob as a regular expression over the whole type, as Python's fnmatch.fnmatchcase reads it. */
function globToRegExp(pattern: string): RegExp {
  let source = "";
  const characters = [...pattern];
  for (let i = 0; i < characters.length; i += 1) {
    const character = characters[i] as string;
    if (character === "*") {
      source += "[\\s\\S]*";
    } else if (character === "?") {
      source += "[\\s\\S]";
    } else if (character === "[") {
      let j = i + 1;
      if (characters[j] === "!") j += 1;
      if (characters[j] === "]") j += 1;
      while (j < characters.length && characters[j] !== "]") j += 1;
      if (j >= characters.length) {
        source += "\\[";  // no closing bracket: a literal '[', as fnmatch has it
      } else {
        let inner = characters.slice(i + 1, j).join("");
        const negated = inner.startsWith("!");
        if (negated) inner = inner.slice(1);
        inner = inner.replace(/\\/g, "\\\\").replace(/\^/g, "\\^").replace(/\[/g, "\\[").replace(/]/g, "\\]");
        // Ranges ('a-c') keep their hyphen; a leading or trailing one is literal in both languages.
        source += `[${negated ? "^" : ""}${inner}]`;
        i = j;
      }
    } else {
      source += character.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    }
  }
  return new RegExp(`^(?:${source})$`, "u");
}

/** Compares as Python compares strings: by code point (JavaScript's `<` compares UTF-16 units). */
function byCodePoint(a: string, b: string): number {
  const left = [...a].map((c) => c.codePointAt(0) ?? 0);
  const right = [...b].map((c) => c.codePointAt(0) ?? 0);
  for (let i = 0; i < Math.min(left.length, right.length); i += 1) {
    if (left[i] !== right[i]) return (left[i] as number) - (right[i] as number);
  }
  return left.length - right.length;
}

/** The routing table: a job type's tier by its exact name, else by the longest matching glob. */
export class Routes {
  readonly table: Readonly<Record<string, string>>;
  private readonly ordered: { pattern: string; tier: string; matches: RegExp }[];

  constructor(table: Record<string, string>) {
    if (typeof table !== "object" || table === null || Array.isArray(table)) {
      throw new TypeError("routes must be an object of {job type glob: tier}");
    }
    for (const [pattern, tier] of Object.entries(table)) {
      if (!pattern || typeof tier !== "string" || !tier) {
        throw new TypeError(`route ${JSON.stringify(pattern)} -> ${JSON.stringify(tier)}: pattern and tier must be non-empty strings`);
      }
    }
    this.table = { ...table };
    // Most specific first: exact patterns, then longer globs before shorter ones.
    this.ordered = Object.entries(table)
      .map(([pattern, tier]) => ({ pattern, tier, matches: globToRegExp(pattern) }))
      .sort(
        (a, b) =>
          Number(isGlob(a.pattern)) - Number(isGlob(b.pattern)) ||
          [...b.pattern].length - [...a.pattern].length ||
          byCodePoint(a.pattern, b.pattern),
      );
  }

  /** The tier of `jobType`, or a `no_route` problem naming the routes there are. */
  tierFor(jobType: string): { tier: string } | { problem: Problem } {
    for (const { tier, matches } of this.ordered) {
      if (matches.test(jobType)) {
        return { tier };
      }
    }
    const known = Object.keys(this.table).sort().join(", ") || "(none)";
    return {
      problem: { code: "no_route", message: `no route for job type ${JSON.stringify(jobType)}; routes: ${known}` },
    };
  }
}
