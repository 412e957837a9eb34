// The CommonJS build sits under a "type": "module" package: its own package.json tells Node it is CommonJS.
import { writeFileSync } from "node:fs";

writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), '{\n  "type": "commonjs"\n}\n');
