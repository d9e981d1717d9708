import { expect } from 'vitest';
import { ProviderError } from './errors.ts';

/** The ProviderError a provider call rejects with (the test fails if it resolves or throws anything else). */
export async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}
