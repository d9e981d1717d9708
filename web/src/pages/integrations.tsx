import { PageTitle } from '../ui.tsx';

export function IntegrationsPage(_props: { params: Record<string, string> }) {
  return <PageTitle>IntegrationsPage</PageTitle>;
}

