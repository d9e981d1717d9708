import { PageTitle } from '../ui.tsx';

export function CallsPage(_props: { params: Record<string, string> }) {
  return <PageTitle>CallsPage</PageTitle>;
}

