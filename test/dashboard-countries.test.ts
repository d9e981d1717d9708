import { getCountries } from 'libphonenumber-js';
import { describe, expect, it } from 'vitest';
import { countryOptions, numberingPlanCountries } from '../web/src/countries.ts';

// The dashboard's country picker offers what the API accepts (a numbering plan in libphonenumber).
describe("the dashboard's countries", () => {
  it("are libphonenumber's, the countries the API reads numbers of", () => {
    expect(numberingPlanCountries()).toEqual([...getCountries()].sort());
  });

  it('offers no withdrawn code the browser still names (East Germany, Metropolitan France, Zaire) and names the rest', () => {
    const codes = countryOptions().map(([code]) => code);
    for (const withdrawn of ['DD', 'FX', 'ZR', 'YU', 'CS', 'SU', 'AN']) expect(codes).not.toContain(withdrawn);
    expect(countryOptions()).toContainEqual(['DE', 'Germany (DE)']);
    expect(countryOptions()).toContainEqual(['CD', 'Congo - Kinshasa (CD)']);
  });
});
