// Seed §2.2, §2.3, §2.8, §4.4, §8; contract §4.
import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx } from '../../platform/context.ts';
import { PageOf, pageOf, toPage } from '../../platform/pagination.ts';
import { appError, MULTIPART_LIMITS } from '../../platform/errors.ts';
import { phoneCountry } from '../../platform/phone-numbers.ts';
import { errorResponses, IdParams, PATTERN_MESSAGE } from '../../platform/schemas.ts';
import { CONTACT_CSV_LIMIT, readCsvRows } from './csv-rows.ts';
import * as contacts from './service.ts';
import {
  BulkContactsBody,
  Contact,
  ContactList,
  ContactParams,
  ContactsQuery,
  CreateContactBody,
  CreateListBody,
  DeleteBatchBody,
  ListQuery,
  UpdateContactBody,
  UpdateListBody,
  UploadResult,
} from './schemas.ts';

const CSV_BYTE_LIMIT = 5 * 1024 * 1024;

/** `listInUse` is handed down by the composition root (app.ts): campaigns sit above contacts. */
export const contactRoutes =
  (listInUse: contacts.ListUsage): ModulePlugin =>
  (plugin, options) =>
    mountContactRoutes(listInUse, plugin, options);

async function mountContactRoutes(
  listInUse: contacts.ListUsage,
  plugin: Parameters<ModulePlugin>[0],
  { deps }: Parameters<ModulePlugin>[1],
) {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: Parameters<typeof principalOf>[0]) => tenantCtx(deps, principalOf(request).tenantId);
  const tags = ['contacts'];

  app.post(
    '/contact-lists',
    {
      schema: {
        tags,
        summary: 'Create an empty contact list',
        body: CreateListBody,
        response: { 201: ContactList, ...errorResponses(400, 401, 403, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await contacts.createList(ctxOf(request), request.body)),
  );

  app.get(
    '/contact-lists',
    {
      schema: {
        tags,
        summary: 'List contact lists',
        querystring: ListQuery,
        response: { 200: PageOf(ContactList), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await contacts.listLists(ctxOf(request), request.query.search, page);
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/contact-lists/:id',
    {
      schema: {
        tags,
        summary: 'Get a contact list',
        params: IdParams,
        response: { 200: ContactList, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => contacts.getList(ctxOf(request), request.params.id),
  );

  app.patch(
    '/contact-lists/:id',
    {
      schema: {
        tags,
        summary: 'Rename a contact list or change its metadata',
        params: IdParams,
        body: UpdateListBody,
        response: { 200: ContactList, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => contacts.updateList(ctxOf(request), request.params.id, request.body),
  );

  app.delete(
    '/contact-lists/:id',
    {
      schema: {
        tags,
        summary: 'Delete a contact list and all its contacts',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      await contacts.deleteList(ctxOf(request), request.params.id, listInUse);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/contact-lists/:id/contacts',
    {
      schema: {
        tags,
        summary: 'Add one contact',
        params: IdParams,
        body: CreateContactBody,
        response: { 201: Contact, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await contacts.addContact(ctxOf(request), request.params.id, request.body)),
  );

  app.post(
    '/contact-lists/:id/contacts/bulk',
    {
      schema: {
        tags,
        summary: 'Add 1 to 1,000 contacts; invalid rows are reported, valid ones imported in one transaction',
        params: IdParams,
        body: BulkContactsBody,
        response: { 200: UploadResult, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) =>
      contacts.importContacts(
        ctxOf(request),
        request.params.id,
        request.body.contacts.map((fields, index) => ({ row: index + 1, fields })),
      ),
  );

  await app.register(multipart, { limits: { fileSize: CSV_BYTE_LIMIT, ...MULTIPART_LIMITS } });
  app.post(
    '/contact-lists/:id/upload',
    {
      bodyLimit: CSV_BYTE_LIMIT + 64 * 1024,
      config: { unsupportedMediaType: 'UNSUPPORTED_MEDIA_TYPE.csv' },
      schema: {
        tags,
        summary: `Import contacts from a CSV file (multipart/form-data, field "file"; at most ${CONTACT_CSV_LIMIT.rows} rows, 5 MB)`,
        consumes: ['multipart/form-data'],
        params: IdParams,
        querystring: Type.Object(
          {
            defaultCountry: Type.Optional(
              Type.String({
                pattern: '^[A-Z]{2}$',
                [PATTERN_MESSAGE]: 'an ISO 3166-1 country code in capitals, such as US',
                description:
                  'ISO 3166-1 alpha-2 country (DE, US, …) of phone numbers written without + and country code, such as 030 1234567; without it every number must be E.164.',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: UploadResult, ...errorResponses(400, 401, 403, 404, 413, 415) },
      },
    },
    async (request) => {
      if (!request.isMultipart()) throw appError('UNSUPPORTED_MEDIA_TYPE.csv');
      const ctx = ctxOf(request);
      const { defaultCountry } = request.query;
      const country = defaultCountry === undefined ? undefined : phoneCountry(defaultCountry);
      if (country === null)
        throw appError(
          'VALIDATION_FAILED',
          { subject: 'defaultCountry', problem: `"${defaultCountry}" is not a country with a known numbering plan` },
          [{ path: '/defaultCountry', message: 'must be an ISO 3166-1 alpha-2 country code such as DE or US' }],
        );
      await contacts.requireList(ctx, request.params.id);
      const part = await request.file();
      if (!part || part.fieldname !== 'file') throw appError('FILE_REQUIRED');
      const rows = await readCsvRows(part.file, CONTACT_CSV_LIMIT);
      if (part.file.truncated) throw appError('PAYLOAD_TOO_LARGE.csv');
      return contacts.importContacts(ctx, request.params.id, rows, { defaultCountry: country });
    },
  );

  app.get(
    '/contact-lists/:id/contacts',
    {
      schema: {
        tags,
        summary: 'List the contacts of a list (all of them when neither page nor limit is given)',
        params: IdParams,
        querystring: ContactsQuery,
        response: { 200: PageOf(Contact), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const { page, limit, search } = request.query;
      const paged = page === undefined && limit === undefined ? undefined : toPage({ page, limit });
      const body = await contacts.listContacts(ctxOf(request), request.params.id, paged, search?.trim() || undefined);
      // JSON text already, the contacts as the database wrote them: Fastify sends a string as it is, unserialised.
      return reply.type('application/json; charset=utf-8').send(body as never);
    },
  );

  app.post(
    '/contact-lists/:id/contacts/delete-batch',
    {
      schema: {
        tags,
        summary: 'Delete 1 to 1,000 contacts atomically',
        params: IdParams,
        body: DeleteBatchBody,
        response: { 200: Type.Object({ deleted: Type.Integer() }), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => contacts.deleteContactsBatch(ctxOf(request), request.params.id, request.body.contactIds),
  );

  app.get(
    '/contact-lists/:id/contacts/:contactId',
    {
      schema: { tags, summary: 'Get a contact', params: ContactParams, response: { 200: Contact, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request) => contacts.getContact(ctxOf(request), request.params.id, request.params.contactId),
  );

  app.patch(
    '/contact-lists/:id/contacts/:contactId',
    {
      schema: {
        tags,
        summary: 'Update a contact',
        params: ContactParams,
        body: UpdateContactBody,
        response: { 200: Contact, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => contacts.updateContact(ctxOf(request), request.params.id, request.params.contactId, request.body),
  );

  app.delete(
    '/contact-lists/:id/contacts/:contactId',
    {
      schema: {
        tags,
        summary: 'Delete a contact',
        params: ContactParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      await contacts.deleteContact(ctxOf(request), request.params.id, request.params.contactId);
      return reply.code(204).send(null);
    },
  );
}
