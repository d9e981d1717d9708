import { PageTitle } from '../ui.tsx';

export function ContactListsPage(_props: { params: Record<string, string> }) {
  return <PageTitle>ContactListsPage</PageTitle>;
}

export function ContactListPage(_props: { params: Record<string, string> }) {
  return <PageTitle>ContactListPage</PageTitle>;
}

