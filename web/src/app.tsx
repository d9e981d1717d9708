import type { ComponentType } from 'preact';
import type { Profile as ProfileAnswer } from '../../src/api-types.ts';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, session } from './api.ts';
import { Layout } from './layout.tsx';
import { ProfileContext, type Profile } from './profile.ts';
import { authPageOf, loginPathFor, match, navigate, pageAfterLogin, useRoute } from './router.ts';
import { AuthPage } from './pages/auth.tsx';
import { KeysPage } from './pages/keys.tsx';
import { AgentPage } from './pages/agent.tsx';
import { AgentsPage } from './pages/agents.tsx';
import { CallPage } from './pages/call.tsx';
import { CallsPage } from './pages/calls.tsx';
import { CampaignEditPage, CampaignPage, CampaignsPage } from './pages/campaigns.tsx';
import { ContactListPage, ContactListsPage } from './pages/contacts.tsx';
import { IntegrationsPage } from './pages/integrations.tsx';
import { KnowledgeBasePage, KnowledgeBasesPage } from './pages/knowledge.tsx';
import { MessagingPage } from './pages/messaging.tsx';
import { UsagePage } from './pages/usage.tsx';
import { AnalyticsPage } from './pages/analytics.tsx';
import { ScorecardPage } from './pages/scorecard.tsx';
import { SimulateCallPage } from './pages/simulate-call.tsx';
import { WebhooksPage } from './pages/webhooks.tsx';
import { ComplianceRecordsPage, ConsentsPage, DoNotCallPage } from './pages/compliance.tsx';

type Params = Record<string, string>;

/** Every signed-in page, by hash path; the first that matches wins. */
const ROUTES: [string, ComponentType<{ params: Params }>][] = [
  ['/campaigns', CampaignsPage],
  ['/campaigns/new', CampaignEditPage],
  ['/campaigns/:id/edit', CampaignEditPage],
  ['/campaigns/:id', CampaignPage],
  ['/calls', CallsPage],
  ['/calls/simulate', SimulateCallPage],
  ['/calls/:id', CallPage],
  ['/contacts', ContactListsPage],
  ['/contacts/:id', ContactListPage],
  ['/agents', AgentsPage],
  ['/agents/:id', AgentPage],
  ['/messaging', MessagingPage],
  ['/knowledge', KnowledgeBasesPage],
  ['/knowledge/:id', KnowledgeBasePage],
  ['/analytics', AnalyticsPage],
  ['/usage', UsagePage],
  ['/webhooks', WebhooksPage],
  ['/do-not-call', DoNotCallPage],
  ['/consents', ConsentsPage],
  ['/compliance-records', ComplianceRecordsPage],
  ['/scorecard', ScorecardPage],
  ['/keys', KeysPage],
  ['/integrations', IntegrationsPage],
];

const PROFILE_REFRESH_MS = 15_000;

export function App() {
  const path = useRoute();
  const [signedIn, setSignedIn] = useState(session.active);
  const [profile, setProfile] = useState<Profile | undefined>(undefined);
  useEffect(() => session.subscribe(() => setSignedIn(session.active)), []);

  const refresh = useCallback(() => {
    // The cookies expired with the session: back to the log-in page.
    if (!session.active) return setSignedIn(false);
    api<ProfileAnswer>('GET', '/profile').then(
      (answer) => setProfile(answer.data),
      () => undefined,
    );
  }, []);
  useEffect(() => {
    setProfile(undefined);
    if (!signedIn) return;
    refresh();
    const timer = setInterval(refresh, PROFILE_REFRESH_MS);
    return () => clearInterval(timer);
  }, [signedIn, refresh]);

  if (!signedIn) {
    // A deep link opened while signed out (or a session that expired) comes back after logging in.
    const auth = authPageOf(path);
    if (!auth) navigate(loginPathFor(path));
    return <AuthPage mode={auth === '/signup' ? 'signup' : 'login'} next={new URLSearchParams(path.split('?')[1] ?? '').get('next')} />;
  }
  if (path === '/' || authPageOf(path)) {
    navigate(pageAfterLogin(path));
    return null;
  }
  let page = <p>There is no page at {path}.</p>;
  for (const [pattern, Page] of ROUTES) {
    const params = match(pattern, path);
    if (params) {
      page = <Page params={params} />;
      break;
    }
  }
  return (
    <ProfileContext.Provider value={{ profile, refresh }}>
      <Layout path={path}>{page}</Layout>
    </ProfileContext.Provider>
  );
}
