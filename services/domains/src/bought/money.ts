import type { Money } from "@hatch/contracts";

/** A USD price in cents as the tools show it. */
export function money(amountMinor: number, currency = "USD"): Money {
  const amount = (amountMinor / 100).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  return { amountMinor, currency, formatted: currency === "USD" ? `$${amount}` : `${amount} ${currency}` };
}

export const moneyOrNull = (amountMinor: number | null, currency = "USD"): Money | null =>
  amountMinor === null ? null : money(amountMinor, currency);
