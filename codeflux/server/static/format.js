// Exact, honest formatting: money from integer minor units (never floats), "unknown" never 0, ranges.

export function money(m) {
  if (!m) return "unknown";
  if (m.display) return m.display;
  const places = Number(m.decimalPlaces || 0);
  let minor = BigInt(m.minorUnits || "0");
  const negative = minor < 0n;
  if (negative) minor = -minor;
  const text = minor.toString().padStart(places + 1, "0");
  const whole = places ? text.slice(0, -places) : text;
  const fraction = places ? `.${text.slice(-places)}` : "";
  return `${negative ? "-" : ""}${m.currency || ""} ${whole}${fraction}`.trim();
}

// MaybeMoney → text: the amount when known, else "unknown (reason)".
export function maybeMoney(mm) {
  if (!mm || !mm.known) {
    const reason = mm && mm.unknownReason ? ` (${mm.unknownReason})` : "";
    return `unknown${reason}`;
  }
  return money(mm.amount);
}

export function moneyRange(range) {
  if (!range) return "unknown";
  const low = maybeMoney(range.low);
  const high = maybeMoney(range.high);
  return low === high ? low : `${low} – ${high}`;
}

// CountRange (int64 strings; proto3 JSON omits zeros). Absent range = unknown.
export function countRange(range, unit) {
  if (!range) return "unknown";
  const low = String(range.low || "0");
  const high = String(range.high || "0");
  const suffix = unit ? ` ${unit}` : "";
  return low === high ? `${low}${suffix}` : `${low} – ${high}${suffix}`;
}

export function timeOf(createdAtUs) {
  if (!createdAtUs) return "";
  const ms = Number(BigInt(createdAtUs) / 1000n);
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

export function parsePayload(event) {
  if (!event.payloadJson) return {};
  try {
    const value = JSON.parse(event.payloadJson);
    return value && typeof value === "object" ? value : { value };
  } catch {
    return { unparsed: event.payloadJson };
  }
}

export function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

// Text from a tool request (arguments, argv, paths) as a person is shown it — the rule of
// codeflux/domain/display.py `escape_for_display`, so the CLI and the browser show the same text:
// a backslash shows as "\\"; every character of general category C (controls, tab and newline included;
// format characters such as the bidi overrides U+202A–U+202E / U+2066–U+2069 and the zero-width ones;
// surrogates; private use; unassigned) and every separator but the ASCII space (Z) shows as \uXXXX
// (lowercase hex), or \UXXXXXXXX above U+FFFF. Nothing hidden can reorder or disguise what would run,
// and a real "\u202e" typed as six characters reads "\\u202e", so the display is unambiguous.
const PLAIN = /^[\x20-\x5b\x5d-\x7e]*$/;
const HIDDEN = /[\p{C}\p{Z}]/u;

export function escapeForDisplay(text) {
  const value = text === undefined || text === null ? "" : String(text);
  if (PLAIN.test(value)) return value;
  let shown = "";
  for (const character of value) { // by code point; a lone surrogate comes out on its own
    if (character === "\\") {
      shown += "\\\\";
    } else if (character !== " " && HIDDEN.test(character)) {
      const code = character.codePointAt(0);
      shown += code <= 0xffff ? `\\u${code.toString(16).padStart(4, "0")}` : `\\U${code.toString(16).padStart(8, "0")}`;
    } else {
      shown += character;
    }
  }
  return shown;
}
