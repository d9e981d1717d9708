import { Decimal } from 'decimal.js';

/** Money is exact: decimal.js in TypeScript, numeric in SQL, 4-digit decimal strings in the API. */
export const Money = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_EVEN });
export type Money = InstanceType<typeof Money>;

export const money = (value: string | number | Money): Money => new Money(value);
export const formatMoney = (value: string | Money): string => new Money(value).toFixed(4);
