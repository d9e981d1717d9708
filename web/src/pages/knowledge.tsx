import { PageTitle } from '../ui.tsx';

export function KnowledgeBasesPage(_props: { params: Record<string, string> }) {
  return <PageTitle>KnowledgeBasesPage</PageTitle>;
}

export function KnowledgeBasePage(_props: { params: Record<string, string> }) {
  return <PageTitle>KnowledgeBasePage</PageTitle>;
}

