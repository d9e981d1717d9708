import { PageTitle } from '../ui.tsx';

export function CampaignsPage(_props: { params: Record<string, string> }) {
  return <PageTitle>CampaignsPage</PageTitle>;
}

export function CampaignEditPage(_props: { params: Record<string, string> }) {
  return <PageTitle>CampaignEditPage</PageTitle>;
}

export function CampaignPage(_props: { params: Record<string, string> }) {
  return <PageTitle>CampaignPage</PageTitle>;
}

