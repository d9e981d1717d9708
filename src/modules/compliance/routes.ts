// The tenant's do-not-call list: add, check, remove, list, import a CSV, export it.
import { Readable } from 'node:stream';
import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx } from '../../platform/context.ts';
import { appError, MULTIPART_LIMITS } from '../../platform/errors.ts';
import { PageOf, pageOf, toPage } from '../../platform/pagination.ts';
import { errorResponses, IdParams } from '../../platform/schemas.ts';
import { readCsvRows } from '../contacts/service.ts';
import * as compliance from './service.ts';
import {
  AddConsentBody,
  AddDncBody,
  ChainVerification,
  ComplianceSettings,
  Consent,
  ConsentQuery,
  DncEntry,
  DncImportResult,
  DncParams,
  DncQuery,
  UpdateComplianceSettings,
} from './schemas.ts';

const CSV_BYTE_LIMIT = 5 * 1024 * 1024;

export const complianceRoutes: ModulePlugin = async (plugin, { deps }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: Parameters<typeof principalOf>[0]) => tenantCtx(deps, principalOf(request).tenantId);
  const tags = ['do-not-call'];

  app.post(
    '/dnc',
    {
      schema: {
        tags,
        summary: 'Put a number on the do-not-call list (201; 200 with the existing entry when it is listed already)',
        body: AddDncBody,
        response: { 200: DncEntry, 201: DncEntry, ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const { entry, created } = await compliance.addFromApi(ctxOf(request), request.body);
      return reply.code(created ? 201 : 200).send(entry);
    },
  );

  app.get(
    '/dnc',
    {
      schema: {
        tags,
        summary: 'List the do-not-call list, newest first',
        querystring: DncQuery,
        response: { 200: PageOf(DncEntry), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await compliance.listDoNotCall(ctxOf(request), request.query.search, page);
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/dnc/export',
    {
      schema: {
        tags,
        summary: 'The whole do-not-call list as CSV (phone_number, source, reason, created_at, evidence)',
        response: {
          200: { description: 'text/csv', content: { 'text/csv': { schema: Type.Unsafe<Readable>({ type: 'string' }) } } },
          ...errorResponses(401, 403),
        },
      },
    },
    async (request, reply) =>
      reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="do-not-call.csv"')
        .send(Readable.from(compliance.exportDoNotCall(ctxOf(request)))),
  );

  await app.register(multipart, { limits: { fileSize: CSV_BYTE_LIMIT, ...MULTIPART_LIMITS } });
  app.post(
    '/dnc/import',
    {
      bodyLimit: CSV_BYTE_LIMIT + 64 * 1024,
      config: { unsupportedMediaType: 'UNSUPPORTED_MEDIA_TYPE.csv' },
      schema: {
        tags,
        summary: `Import numbers from a CSV file (multipart/form-data, field "file"; a phone column and an optional reason column; at most ${compliance.DNC_CSV_LIMIT.rows.toLocaleString('en-US')} rows, 5 MB)`,
        consumes: ['multipart/form-data'],
        response: { 200: DncImportResult, ...errorResponses(400, 401, 403, 413, 415) },
      },
    },
    async (request) => {
      if (!request.isMultipart()) throw appError('UNSUPPORTED_MEDIA_TYPE.csv');
      const part = await request.file();
      if (!part || part.fieldname !== 'file') throw appError('FILE_REQUIRED');
      const rows = await readCsvRows(part.file, compliance.DNC_CSV_LIMIT);
      if (part.file.truncated) throw appError('PAYLOAD_TOO_LARGE.csv');
      return compliance.importDoNotCall(ctxOf(request), rows);
    },
  );

  app.get(
    '/dnc/:phoneNumber',
    {
      schema: {
        tags,
        summary: 'Check a number: its entry, or 404 when it is not on the list',
        params: DncParams,
        response: { 200: DncEntry, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => compliance.getDoNotCall(ctxOf(request), request.params.phoneNumber),
  );

  app.delete(
    '/dnc/:phoneNumber',
    {
      schema: {
        tags,
        summary: 'Take a number off the do-not-call list',
        params: DncParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      await compliance.removeFromDoNotCall(ctxOf(request), request.params.phoneNumber);
      return reply.code(204).send(null);
    },
  );

  const complianceTags = ['compliance'];
  app.get(
    '/compliance/settings',
    {
      schema: {
        tags: complianceTags,
        summary:
          'The tenant’s compliance settings: defaults of new campaigns, frequency caps, its own calling rules, and the statutory rules applied',
        response: { 200: ComplianceSettings, ...errorResponses(401, 403) },
      },
    },
    async (request) => compliance.getComplianceSettings(ctxOf(request)),
  );

  app.put(
    '/compliance/settings',
    {
      schema: {
        tags: complianceTags,
        summary:
          'Change compliance settings (the fields given); campaign defaults apply to campaigns created afterwards, caps and rules at once',
        body: UpdateComplianceSettings,
        response: { 200: ComplianceSettings, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => compliance.updateComplianceSettings(ctxOf(request), request.body),
  );

  app.get(
    '/compliance/records/verify',
    {
      schema: {
        tags: complianceTags,
        summary: 'Check the tenant’s chain of dial-decision records: the first record changed, removed or out of place, if any',
        response: { 200: ChainVerification, ...errorResponses(401, 403) },
      },
    },
    async (request) => compliance.verifyRecords(ctxOf(request)),
  );

  const consentTags = ['consents'];
  app.post(
    '/consents',
    {
      schema: {
        tags: consentTags,
        summary: 'Record a person’s consent to be contacted on a channel',
        body: AddConsentBody,
        response: { 201: Consent, ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => reply.code(201).send(await compliance.addConsent(ctxOf(request), request.body)),
  );

  app.get(
    '/consents',
    {
      schema: {
        tags: consentTags,
        summary: 'List consents, newest first (filter by phoneNumber)',
        querystring: ConsentQuery,
        response: { 200: PageOf(Consent), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await compliance.listConsents(ctxOf(request), request.query.phoneNumber, page);
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/consents/:id',
    {
      schema: {
        tags: consentTags,
        summary: 'One consent',
        params: IdParams,
        response: { 200: Consent, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => compliance.getConsent(ctxOf(request), request.params.id),
  );

  app.post(
    '/consents/:id/revoke',
    {
      schema: {
        tags: consentTags,
        summary: 'Revoke a consent: it stays on record with its revocation time and no longer counts',
        params: IdParams,
        response: { 200: Consent, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => compliance.revokeConsent(ctxOf(request), request.params.id),
  );
};
