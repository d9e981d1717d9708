import { PageTitle } from '../ui.tsx';

export function MessagingPage(_props: { params: Record<string, string> }) {
  return <PageTitle>MessagingPage</PageTitle>;
}

