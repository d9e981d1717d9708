import { PageTitle } from '../ui.tsx';

export function AgentsPage(_props: { params: Record<string, string> }) {
  return <PageTitle>AgentsPage</PageTitle>;
}

