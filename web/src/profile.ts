import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

export interface Profile {
  user: { id: string; email: string; name?: string | null } | null;
  tenant: { id: string; name: string; slug: string; currency: string; country: string | null };
  wallet: { id: string; balance: string; currency: string; lowBalanceThreshold: string };
}

/** The signed-in user's profile, refreshed by the layout; `refresh` after anything that costs money. */
export const ProfileContext = createContext<{ profile: Profile | undefined; refresh: () => void }>({
  profile: undefined,
  refresh: () => undefined,
});
export const useProfile = () => useContext(ProfileContext);
