/**
 * One cell of a CSV file the service writes (every CSV export). Quoted when it holds a quote, a
 * comma or a line break. A cell that begins with =, +, -, @, a tab or a carriage return would be
 * read as a formula by a spreadsheet (CSV injection), so, as OWASP advises, it is prefixed with a
 * single quote and quoted. A plain number (an E.164 phone number, -3.5) can hold no formula and is
 * written as it is, so exported numbers stay numbers.
 */
export function csvCell(value: string): string {
  const formula = /^[=+\-@\t\r]/.test(value) && !/^[+-]?\d+(\.\d+)?$/.test(value);
  const cell = formula ? `'${value}` : value;
  return formula || /[",\r\n]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell;
}
