import { PageTitle } from '../ui.tsx';

export function UsagePage(_props: { params: Record<string, string> }) {
  return <PageTitle>UsagePage</PageTitle>;
}

