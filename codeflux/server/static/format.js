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
