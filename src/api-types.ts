/**
 * The wall between the API and the dashboard (web/): the only server file web/ may import, with
 * `import type` only. Every export is a type, the static type of a TypeBox schema the routes answer
 * or accept with, so the dashboard is type-checked against the API and nothing of the server is
 * bundled. A type belongs here only once a dashboard page uses it (docs/decisions/0025-dashboard-imports-api-types.md).
 */
import type { Static } from '@sinclair/typebox';
import type { Result } from './modules/analytics/schemas.ts';

export type { ErrorBody } from './platform/schemas.ts';
export type { PageOf } from './platform/pagination.ts';
export type {
  Agent,
  AgentLlm,
  AgentVersion,
  AgentVersionDiff,
  AgentStt,
  AgentTts,
  CreateAgentBody,
  CreateVoiceNumberBody,
  CustomTool,
  PublishVersionBody,
  UpdateAgentBody,
  UpdateVoiceNumberBody,
  Voice,
  VoiceNumber,
} from './modules/agents/schemas.ts';
export type {
  BindingField,
  Bindings,
  Detail,
  ExperimentArm,
  ExperimentReport,
  PutBindingsBody,
  Tool,
  Trends,
} from './modules/analytics/schemas.ts';
export type { Call, CallOutcomeRecord, InboundCallBody, TranscriptTurn } from './modules/calls/schemas.ts';
export type { CreateTestChatBody, TestChat, TestChatMessageBody } from './modules/conversation/schemas.ts';
export type { BrowserAudio, BrowserCallCommand, BrowserCallEvent, BrowserCallProtocol } from './modules/media/schemas.ts';
export type {
  AnsweringMachine,
  Campaign,
  CampaignContact,
  CampaignStats,
  CampaignStatus,
  CreateCampaignBody,
  Experiment,
  RetryOutcome,
  RetryRule,
  RetryRules,
} from './modules/campaigns/schemas.ts';
export type {
  AddConsentBody,
  AddDncBody,
  ChainVerification,
  ComplianceRecord,
  Consent,
  ConsentChannel,
  DncEntry,
} from './modules/compliance/schemas.ts';
export type { Contact, ContactList, CreateContactBody, CreateListBody, DeleteBatchBody, UploadResult } from './modules/contacts/schemas.ts';
export type { Delivery } from './modules/events/schemas.ts';
export type { ApiKey, CreateApiKeyBody, CreatedApiKey, LoginBody, Profile, Session, SignupBody } from './modules/identity/schemas.ts';
export type { Integration } from './modules/integrations/schemas.ts';
export type { CreateBaseBody, KnowledgeBase, KnowledgeSource, QueryBody, QueryResult } from './modules/knowledge/schemas.ts';
export type {
  CreateSmsCampaignBody,
  CreateWhatsAppCampaignBody,
  Message,
  SmsCampaign,
  UpdateSmsCampaignBody,
  UpdateWhatsAppCampaignBody,
  WhatsAppCampaign,
} from './modules/messaging/schemas.ts';
export type { CreateRehearsalBody, ListedRehearsal, Rehearsal, RehearsedContact } from './modules/rehearsals/schemas.ts';
export type {
  CallScorecard,
  CreateTestSuiteBody,
  PassRates,
  PutScorecardBody,
  Scorecard,
  TestSuite,
  TestSuiteRun,
  TestSuiteRunDetail,
  UpdateTestSuiteBody,
} from './modules/suites/schemas.ts';

/** A call's analytics record (`GET /analytics/results`): its schema has no type of its own. */
export type AnalyticsResult = Static<typeof Result>;
