import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Profile as ProfileAnswer } from '../../src/api-types.ts';

export type Profile = ProfileAnswer['data'];

/** The signed-in user's profile, refreshed by the layout; `refresh` after anything that costs money. */
export const ProfileContext = createContext<{ profile: Profile | undefined; refresh: () => void }>({
  profile: undefined,
  refresh: () => undefined,
});
export const useProfile = () => useContext(ProfileContext);
