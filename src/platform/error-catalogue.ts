import { STATUS_CODES } from 'node:http';

/**
 * Every error the API (and the CLI) can answer with, declared once: its HTTP status, the sentence
 * it says and when. Outside clients match on `code` and often on the sentence, so both are part of
 * the contract; docs/errors.md is generated from this file (npm run docs:errors).
 *
 * A key is the wire code, or `CODE.variant` when one code says different sentences in different
 * places (every variant keeps the code's status). `${name}` in a sentence is a named parameter that
 * the throw site supplies: `appError('NOT_FOUND', { what: 'Agent' })`.
 */
export interface ErrorEntry {
  readonly status: number;
  readonly message: string;
  readonly when: string;
}

const declared = {
  // 400 Bad Request
  VALIDATION_FAILED: {
    status: 400,
    message: '${subject} ${problem}.',
    when: 'The body, query, path or a header does not match the route schema; details lists every field at fault (the first 100).',
  },
  'VALIDATION_FAILED.timezone': {
    status: 400,
    message: 'Unknown time zone "${timezone}"; use an IANA name such as America/New_York, or a city that names one zone, such as Berlin.',
    when: "A campaign's or a contact's timezone is neither an IANA time zone nor a city that names exactly one (a city naming one, such as Berlin, is stored as its zone, Europe/Berlin).",
  },
  'VALIDATION_FAILED.callWindow': {
    status: 400,
    message: 'callWindowStart (${start}) must be before callWindowEnd (${end}).',
    when: "A campaign's call window ends before it starts.",
  },
  'VALIDATION_FAILED.answeringMachine': {
    status: 400,
    message: '${problem}',
    when: "A campaign's answeringMachine setting does not hold together; the sentence says what to change (a voicemail without its message, a message for HANG_UP_AND_RETRY, detection on a number whose provider cannot tell who answers).",
  },
  'VALIDATION_FAILED.experiment': {
    status: 400,
    message: '${problem}',
    when: "A campaign's agentVersion or experiment does not hold together; the sentence says what to change (both set, a version without an agent, one version in two arms).",
  },
  'VALIDATION_FAILED.testSuite': {
    status: 400,
    message: '${problem}',
    when: "A test suite's scenarios do not hold together; the sentence names the field and what to change (a scenario with both or neither of script and persona, two scenarios of one name, two mocks of one tool).",
  },
  'VALIDATION_FAILED.scorecard': {
    status: 400,
    message: '${problem}',
    when: "A scorecard's checks do not hold together: two checks of one name.",
  },
  'VALIDATION_FAILED.compliance': {
    status: 400,
    message: '${problem}',
    when: 'Compliance settings or a consent do not hold together; the sentence says what to change (a rule window that ends before it starts, two rules with one id, a consent that expires before it is granted).',
  },
  'VALIDATION_FAILED.fromAfterTo': { status: 400, message: "'from' must not be after 'to'.", when: 'A time range ends before it starts.' },
  'VALIDATION_FAILED.notAnInstant': {
    status: 400,
    message: "'${name}' is not a real instant.",
    when: 'A date passed the format check but names no real instant (such as February 30).',
  },
  'VALIDATION_FAILED.incomingCall': {
    status: 400,
    message: '${reason}',
    when: "A signed incoming-call webhook lacks what a call needs: the provider's call id or the caller's number.",
  },
  'VALIDATION_FAILED.fromNumber': {
    status: 400,
    message: 'fromNumber is not a valid E.164 phone number.',
    when: 'A simulated inbound call names a caller number that is not a phone number.',
  },
  'VALIDATION_FAILED.bindingFields': {
    status: 400,
    message: 'Field names must be unique, and enumValues must be given for, and only for, enum fields.',
    when: "An agent's extraction fields repeat a name or misuse enumValues.",
  },
  'VALIDATION_FAILED.duplicateMappings': {
    status: 400,
    message: 'Each (process, callStatus, languageCode) may have one template mapping; remove the repeated ones.',
    when: 'A WhatsApp campaign maps two templates to the same moment.',
  },
  'VALIDATION_FAILED.duplicateSmsTemplates': {
    status: 400,
    message: 'An SMS campaign has one template per callStatus; remove the repeated ones.',
    when: 'An SMS campaign gives two templates for one call status.',
  },
  'VALIDATION_FAILED.senderProvider': {
    status: 400,
    message: 'senderProvider must be one of ${allowed}; got ${given}.',
    when: 'An SMS campaign names a sender provider that does not exist.',
  },
  'VALIDATION_FAILED.textTakesRawText': {
    status: 400,
    message: 'A text source takes rawText, not url.',
    when: 'A text knowledge source is given a url.',
  },
  'VALIDATION_FAILED.rawTextRequired': {
    status: 400,
    message: "Field 'rawText' is required when sourceType is text.",
    when: 'A text knowledge source has no text.',
  },
  'VALIDATION_FAILED.rawTextBlank': {
    status: 400,
    message: "Field 'rawText' has only spaces and line breaks; give the text to index.",
    when: 'A text knowledge source whose text is blank.',
  },
  'VALIDATION_FAILED.urlTakesUrl': {
    status: 400,
    message: 'A url source takes url, not rawText.',
    when: 'A url knowledge source is given rawText.',
  },
  'VALIDATION_FAILED.urlRequired': {
    status: 400,
    message: "Field 'url' is required when sourceType is url.",
    when: 'A url knowledge source has no url.',
  },
  'VALIDATION_FAILED.urlNotAbsolute': {
    status: 400,
    message: "Field 'url' must be an absolute http or https URL.",
    when: 'A url knowledge source gives something that is not an absolute URL.',
  },
  'VALIDATION_FAILED.urlScheme': {
    status: 400,
    message: "Field 'url' must use http or https, not ${scheme}.",
    when: 'A url knowledge source uses another scheme (ftp, file, ...).',
  },
  'VALIDATION_FAILED.urlCredentials': {
    status: 400,
    message: "Field 'url' must not carry a user name or password.",
    when: 'A url knowledge source has credentials in it.',
  },
  'VALIDATION_FAILED.privateUrl': {
    status: 400,
    message:
      "Field '${field}' cannot be fetched by this service: ${problem}. Give an address on the public internet (to reach this machine or a private network while testing, start the service with ALLOW_PRIVATE_URLS=1).",
    when: "A URL the service fetches later (an API key's webhookUrl, a url knowledge source, a model server's apiUrl) is an IP address that is not public in any spelling (loopback, private, link-local, unique-local, NAT64 or 6to4 of a private address, …), names localhost, or is a name that resolves only to such addresses.",
  },
  'VALIDATION_FAILED.oneFile': {
    status: 400,
    message: 'Send exactly one file, in the multipart field named "file".',
    when: 'An upload (a document, a CSV file) has a second file, or a file in another field.',
  },
  'VALIDATION_FAILED.multipartIsFile': {
    status: 400,
    message: 'A multipart upload is a file source: set the field sourceType to file (text and url sources are sent as JSON).',
    when: 'A multipart knowledge upload does not say sourceType=file.',
  },
  'VALIDATION_FAILED.sourceName': {
    status: 400,
    message: "Field 'sourceName' is required: a title of 1 to 200 characters.",
    when: 'A document upload has no title, or one longer than 200 characters.',
  },
  INVALID_JSON: {
    status: 400,
    message: 'The request body is not valid JSON; check quotes, commas and brackets.',
    when: 'The body sent as application/json does not parse.',
  },
  'INVALID_JSON.tooDeep': {
    status: 400,
    message: 'The request body nests objects and arrays more than ${max} levels deep; flatten it.',
    when: 'A JSON body nests deeper than the limit (checked before it is parsed).',
  },
  INVALID_MULTIPART: {
    status: 400,
    message: 'The multipart/form-data body is malformed (${reason}); send it as a browser or curl -F would.',
    when: 'A multipart upload whose parts do not parse: cut short, or with broken part headers.',
  },
  'INVALID_MULTIPART.tooManyParts': {
    status: 400,
    message:
      'The multipart/form-data body holds more than ${fields} fields or ${parts} parts; send the one file with at most ${fields} fields beside it.',
    when: 'A multipart upload with more fields or parts than an upload takes.',
  },
  'INVALID_MULTIPART.noBoundary': {
    status: 400,
    message:
      'A multipart/form-data body needs its boundary in the Content-Type header (multipart/form-data; boundary=...); let your HTTP client set that header.',
    when: 'A multipart upload whose Content-Type names no boundary.',
  },
  'BAD_REQUEST.malformedRequest': {
    status: 400,
    message: 'The request is not valid HTTP/1.1 (${reason}); the connection is closed.',
    when: "Node's HTTP parser refused the request before any route saw it: a bad request line, method or header.",
  },
  'BAD_REQUEST.badUrl': {
    status: 400,
    message: 'The path ${path} is not valid percent-encoding; encode reserved characters as %XX.',
    when: 'A path segment has a broken %-escape.',
  },
  'INVALID_JSON.webhook': { status: 400, message: 'The webhook body is not JSON.', when: 'A WhatsApp webhook delivery is not JSON.' },
  INVALID_CONTENT_LENGTH: {
    status: 400,
    message: 'The Content-Length header does not match the body sent.',
    when: 'The body is shorter or longer than its Content-Length.',
  },
  INVALID_IDEMPOTENCY_KEY: {
    status: 400,
    message: 'The Idempotency-Key header must be one value of 1 to 255 characters.',
    when: 'The Idempotency-Key header is empty, repeated or too long.',
  },
  INVALID_CURRENT_PASSWORD: {
    status: 400,
    message: 'The current password is not correct.',
    when: 'A password change gives the wrong current password.',
  },
  EXPIRY_IN_PAST: {
    status: 400,
    message: 'expiresAt must lie in the future.',
    when: 'A new API key would already be expired.',
  },
  INVALID_AMOUNT: { status: 400, message: 'The amount must be a decimal number.', when: 'A wallet credit is not a finite decimal.' },
  INVALID_LANGUAGE: {
    status: 400,
    message: '"${tag}" is not a BCP-47 language tag; use one such as en-US, es or pt-BR.',
    when: "An agent's language is not a language tag.",
  },
  UNKNOWN_TOOL: {
    status: 400,
    message: '"${tool}" is not a tool agents can use; choose from ${tools}.',
    when: 'An agent lists a tool that does not exist.',
  },
  UNKNOWN_TEMPLATE_VARIABLE: {
    status: 400,
    message: '${field} uses {{${variable}}}, which is not a template variable; use ${variables}.',
    when: "An agent's system prompt or first message names a variable that calls cannot fill.",
  },
  TEMPLATE_NEEDS_FALLBACK: {
    status: 400,
    message: '${field} uses {{${variable}}}, which may be empty for a contact; give it a fallback, such as ${fallback}.',
    when: "A text said or sent to a person (an agent's first message, a voicemail, a WhatsApp parameter) names a variable that is not always filled (the contact's name, email, phone in a test chat, metadata, pre-dial variables, the campaign) without a fallback.",
  },
  INVALID_CUSTOM_TOOL: {
    status: 400,
    message: 'Custom tool "${name}": ${problem}.',
    when: "An agent's custom tool repeats a name, takes a built-in tool's name, has parameters that are not a JSON Schema of an object, or a URL that cannot be called.",
  },
  LLM_NOT_CONFIGURED: {
    status: 400,
    message:
      'No language model server is configured for this service; set LLM_API_URL (and LLM_API_KEY), or leave llm null to use the retrieval agent.',
    when: 'An agent names a model while the service has no model server to ask.',
  },
  REALTIME_NOT_CONFIGURED: {
    status: 400,
    message:
      'No OpenAI-compatible server is configured for this tenant or service to run the speech-to-speech model; connect the llm integration (your OpenAI-compatible server), set LLM_API_URL for the service, or leave realtime null.',
    when: "An agent's realtime names a model while neither the tenant's OpenAI-compatible connection nor the service's LLM_API_URL gives it a server to reach.",
  },
  SMART_TURN_NOT_CONFIGURED: {
    status: 400,
    message:
      'This service has no Smart Turn model: its operator sets SMART_TURN_MODEL_PATH to the model file; until then choose stt.endOfTurn WORDS or SILENCE.',
    when: "An agent's stt.endOfTurn is SMART_TURN while the service's SMART_TURN_MODEL_PATH is unset.",
  },
  END_OF_TURN_CONFLICT: {
    status: 400,
    message: 'stt.endOfTurn ${problem}.',
    when: "An agent's stt.endOfTurn does not go with its stt: FLUX with a provider other than DEEPGRAM or a model that is not a Flux model, or a Flux model with another end-of-turn detector.",
  },
  BACKUP_CONFLICT: {
    status: 400,
    message: 'The backup ${part} ${problem}.',
    when: "An agent's backup names what cannot take over: the agent's own model or provider again (a backup must differ), speech on an agent whose calls Twilio's ConversationRelay voices, or speech-to-speech, which has no stages to take over.",
  },
  REALTIME_CONFLICT: {
    status: 400,
    message: 'Speech-to-speech ${problem}.',
    when: "An agent's realtime is set with what it cannot run with: the CONVERSATION_RELAY voice pipeline (Twilio listens and speaks then), or turn detection by the pipeline without an stt to listen with.",
  },
  SPEECH_NOT_CONFIGURED: {
    status: 400,
    message:
      'No ${provider} server is configured for this tenant or service; connect the ${integration} integration, or set ${setting} for the service.',
    when: "An agent's stt or tts names a provider that has no server to reach: neither the tenant's integration nor the service's environment.",
  },
  UNKNOWN_VOICE: {
    status: 400,
    message: '"${voice}" is not a voice of ${provider}; GET /api/v1/voices?provider=${name} lists them.',
    when: "An agent's voice is not one of the voices of its text-to-speech provider.",
  },
  NO_VOICE_FOR_LANGUAGE: {
    status: 400,
    message:
      '${provider} has no voice for ${language}; choose one from GET /api/v1/voices?provider=${name}, or another text-to-speech provider.',
    when: "An agent names no voice and its text-to-speech provider has none for the agent's language.",
  },
  CONVERSATION_RELAY_SPEECH: {
    status: 400,
    message: 'With voicePipeline CONVERSATION_RELAY, ${problem}; ${fix}.',
    when: "An agent voiced by Twilio's ConversationRelay names speech Twilio does not run there (stt other than DEEPGRAM, tts other than ELEVENLABS or with a model), or a voice that cannot be checked.",
  },
  INVALID_PHONE_NUMBER: {
    status: 400,
    message: 'Invalid phone number; give it in E.164 form, such as +14155550100.',
    when: 'A voice number, or a number for the do-not-call list, is not a phone number.',
  },
  INVALID_CONTACT: { status: 400, message: '${reason}.', when: 'A contact fails a check (phone number, name, e-mail, metadata).' },
  'INVALID_CONTACT.phoneNumber': {
    status: 400,
    message: 'Invalid phone number.',
    when: "A contact's new phone number is not a phone number.",
  },
  INVALID_CSV: {
    status: 400,
    message: 'The file is not valid CSV: ${reason}.',
    when: 'An uploaded CSV file (contacts, do-not-call numbers) does not parse as CSV.',
  },
  'INVALID_CSV.noPhoneColumn': {
    status: 400,
    message: 'The CSV has no phone column; name one column ${headers} (any case, with spaces, underscores or hyphens).',
    when: 'No header of the CSV names a phone number column.',
  },
  'INVALID_CSV.empty': {
    status: 400,
    message: 'The CSV file is empty; it needs a header row and at least one contact.',
    when: 'The CSV has not even a header row.',
  },
  'INVALID_CSV.tooManyRows': {
    status: 400,
    message: 'The CSV has more than ${max} ${noun}, the most one import takes, so nothing was imported; split it into smaller files.',
    when: 'The CSV holds more rows than one import takes (500 contacts, 100,000 do-not-call numbers); reading stops at the first row over.',
  },
  'INVALID_CSV.tooManyBlankRows': {
    status: 400,
    message: 'The CSV has more than ${max} rows whose fields are all empty, so nothing was imported; delete the empty rows.',
    when: 'The CSV has so many rows of empty fields (commas only) that reading stopped before its end.',
  },
  'INVALID_CSV.rowTooLong': {
    status: 400,
    message:
      'Row ${row} of the CSV is longer than ${max} characters, so nothing was imported; check that the file is CSV, with commas between fields and its quotes closed.',
    when: 'A row of the CSV is longer than any contact needs: a field whose quote is never closed, or a file that is not CSV.',
  },
  'INVALID_CSV.nulInHeader': {
    status: 400,
    message:
      'Column ${column} of the CSV header row contains the NUL character (\\u0000), which cannot be stored, so nothing was imported; remove it from the header.',
    when: 'A name in the header row of the CSV holds the NUL character (a row holding it is reported as an invalid row).',
  },
  'INVALID_CSV.tooManyColumns': {
    status: 400,
    message:
      'Row ${row} of the CSV has ${columns} columns; at most ${max} are read, so nothing was imported. Remove the columns you do not need.',
    when: 'A row of the CSV has more columns than an import reads.',
  },
  FILE_REQUIRED: {
    status: 400,
    message: 'Attach the CSV in a multipart field named "file".',
    when: 'A CSV import (contacts, do-not-call numbers) has no file in the field "file".',
  },
  'FILE_REQUIRED.document': {
    status: 400,
    message: 'Attach the document in a multipart field named "file".',
    when: 'A document upload has no file.',
  },
  EMPTY_FILE: {
    status: 400,
    message: '"${fileName}" is empty; upload a file with text in it.',
    when: 'An uploaded document has no bytes.',
  },
  LIST_TOO_SMALL: {
    status: 400,
    message: 'A campaign\'s contact list must have at least ${min} contacts; "${list}" has ${count}.',
    when: 'A campaign is given, or starts with, a list below the minimum size.',
  },
  RANGE_TOO_LARGE: {
    status: 400,
    message: 'The range holds more than ${max} ${interval} buckets; choose a shorter range or a larger interval.',
    when: 'A trends query would return too many buckets.',
  },
  INVALID_WEBHOOK: {
    status: 400,
    message: 'The webhook body is not a WhatsApp Business Account notification (no entry list).',
    when: 'A WhatsApp webhook delivery is JSON but not a notification.',
  },
  UNKNOWN_CALL_STATUS: {
    status: 400,
    message: '${reason}',
    when: 'A telephony status callback carries a status its provider does not define; the provider says which (Twilio: \'CallStatus "${status}" is not a Twilio call status.\').',
  },

  // 401 Unauthorized
  AUTHENTICATION_REQUIRED: {
    status: 401,
    message: 'Authentication required',
    when: 'No Authorization header, or one that is not a Bearer token.',
  },
  INVALID_API_KEY: { status: 401, message: 'Invalid API key', when: 'The API key is unknown, revoked or malformed.' },
  API_KEY_EXPIRED: { status: 401, message: 'API key has expired', when: 'The API key is past its expiresAt.' },
  INVALID_SESSION: { status: 401, message: 'Invalid session token', when: 'The dashboard session token is invalid or expired.' },
  INVALID_CREDENTIALS: { status: 401, message: 'Invalid email or password.', when: 'A log-in with a wrong e-mail or password.' },
  'INVALID_SIGNATURE.whatsapp': {
    status: 401,
    message: 'X-Hub-Signature-256 does not match this body signed with the app secret of a connected WhatsApp account.',
    when: 'A WhatsApp webhook delivery is not signed by a connected account.',
  },

  // 403 Forbidden
  API_KEY_NOT_ALLOWED: {
    status: 403,
    message: 'API key authentication is not allowed for this route',
    when: 'A dashboard-only route is called with an API key.',
  },
  CSRF_TOKEN_INVALID: {
    status: 403,
    message:
      "This request is signed in by the dashboard's session cookie but its X-CSRF-Token header is missing or wrong; send the value of the ${cookie} cookie in X-CSRF-Token, or authenticate with Authorization: Bearer instead.",
    when: 'A request that changes something (POST, PUT, PATCH, DELETE) is authenticated by the session cookie without the CSRF token of that session.',
  },
  CROSS_ORIGIN_WEBSOCKET: {
    status: 403,
    message:
      "A WebSocket signed in by the session cookie must be opened from this service's own pages, not from origin ${origin}; other clients authenticate with an Authorization header or the bearer.<token> subprotocol.",
    when: 'A WebSocket upgrade authenticated by the session cookie comes from another origin (or names none).',
  },
  TENANT_CONTEXT_REQUIRED: { status: 403, message: 'Tenant context required', when: 'A platform key calls a tenant route.' },
  SIGNUP_DISABLED: {
    status: 403,
    message: 'Sign-up is switched off on this server; ask its operator for an account.',
    when: 'Sign-up while SIGNUP_ENABLED is false.',
  },
  WEBHOOK_VERIFICATION_FAILED: {
    status: 403,
    message: 'The verify token does not match a webhook token of this service; issue one with POST /api/v1/whatsapp/webhook-token.',
    when: "Meta's subscription handshake names an unknown verify token.",
  },
  'WEBHOOK_VERIFICATION_FAILED.request': {
    status: 403,
    message: 'A subscription handshake needs hub.mode=subscribe, hub.verify_token and hub.challenge; this request ${problem}.',
    when: "A request to the WhatsApp webhook's verification address is not Meta's subscription handshake.",
  },
  INVALID_SIGNATURE: {
    status: 403,
    message: 'The ${header} header does not match this request.',
    when: "A telephony status callback or incoming-call webhook is not signed by the provider account (Twilio: X-Twilio-Signature), or an incoming call's number is not registered, or arrived on another account.",
  },
  'INVALID_SIGNATURE.smsStatus': {
    status: 403,
    message: '${header} does not match this request signed with the ${signedWith} of the account that sent the message.',
    when: "An SMS provider's status callback is not signed by the account that sent the message (Twilio: X-Twilio-Signature with the Auth Token).",
  },

  // 404 Not Found
  NOT_FOUND: {
    status: 404,
    message: '${what} not found.',
    when: 'The id names nothing of this tenant (another tenant’s resources are not found either).',
  },
  'NOT_FOUND.knowledgeBase': {
    status: 404,
    message: 'Knowledge base ${id} not found; create it first or remove it from knowledgeBaseIds.',
    when: "An agent's knowledgeBaseIds names a base the tenant does not have.",
  },
  'NOT_FOUND.recording': {
    status: 404,
    message:
      "Call ${callId} has no recording: its agent did not record it, or the recording was deleted after its retention; turn on the agent's recording to record its next calls.",
    when: "A call's recording is asked for, and the call has none (another tenant's call is not found at all).",
  },
  'NOT_FOUND.agentVersion': {
    status: 404,
    message: 'Agent ${agentId} has no version ${version}; GET /api/v1/agents/${agentId}/versions lists its published versions.',
    when: 'A version of an agent is asked for, pinned by a campaign or given an arm of its experiment, and the agent has not published it (another tenant’s agent is not found at all).',
  },
  'NOT_FOUND.dnc': {
    status: 404,
    message: 'The number is not on the do-not-call list.',
    when: "A do-not-call check or removal names a number the tenant's list does not hold.",
  },
  'NOT_FOUND.consent': {
    status: 404,
    message: 'Consent ${id} not found.',
    when: 'A consent id names no consent of this tenant.',
  },
  'NOT_FOUND.tenant': { status: 404, message: 'No tenant with id ${tenantId}.', when: 'A CLI command names an unknown tenant.' },
  CONTACTS_NOT_FOUND: {
    status: 404,
    message: '${missing} of the ${total} contacts are not in this list; nothing was deleted.',
    when: 'A batch delete names contacts that are not in the list.',
  },
  NOT_IMPLEMENTED: {
    status: 404,
    message: "Agent executions are not an endpoint; list the agent's calls with GET /api/v1/call-logs?agentId=${agentId}.",
    when: "An agent's executions are asked for; the answer names the route that lists its calls.",
  },
  'NOT_IMPLEMENTED.bulkStop': {
    status: 404,
    message: "There is no bulk stop of an agent's calls; hang up each live call with POST /api/v1/call-logs/{id}/hangup.",
    when: "A bulk stop of an agent's calls is asked for.",
  },
  ROUTE_NOT_FOUND: {
    status: 404,
    message: 'The ${service} service has no route ${method} ${path}; see /docs for the routes it offers.',
    when: 'The path is under a module prefix, but that module has no such route.',
  },
  NO_GATEWAY_ROUTE: {
    status: 404,
    message: 'No gateway route for ${method} ${path}',
    when: 'The path belongs to no module.',
  },

  // 409 Conflict
  EMAIL_TAKEN: {
    status: 409,
    message: 'An account with this e-mail address already exists; log in instead.',
    when: 'Sign-up with an e-mail address already registered.',
  },
  AGENT_NAME_TAKEN: {
    status: 409,
    message: 'An agent named "${name}" already exists; choose another name.',
    when: 'Another agent of the tenant has this name.',
  },
  AGENT_IN_USE: {
    status: 409,
    message:
      'A campaign that has not finished uses this agent; give that campaign another agent while it is a draft, or cancel it, then delete the agent.',
    when: 'Deleting an agent an unfinished campaign uses.',
  },
  AGENT_VERSION_UNCHANGED: {
    status: 409,
    message: "The agent's config is the same as its version ${version}, already published; change the agent, or pin version ${version}.",
    when: 'Publishing an agent whose conversational config equals its latest version.',
  },
  VOICE_NUMBER_TAKEN: {
    status: 409,
    message:
      '${phoneNumber} is already registered; a phone number can be registered only once on the platform, so register another number.',
    when: 'The number is registered already, by this or another tenant.',
  },
  VOICE_NUMBER_IN_USE: {
    status: 409,
    message:
      'A campaign that has not finished dials from this number; give that campaign another number while it is a draft, or cancel it, then delete the number.',
    when: 'Deleting a voice number an unfinished campaign dials from.',
  },
  LIST_NAME_TAKEN: {
    status: 409,
    message: 'A contact list named "${name}" already exists; choose another name.',
    when: 'Another contact list of the tenant has this name.',
  },
  LIST_IN_USE: {
    status: 409,
    message:
      'This contact list is assigned to a campaign that has not finished; give a DRAFT campaign another list, or cancel the campaign, first.',
    when: 'Deleting a contact list a campaign uses.',
  },
  DUPLICATE_PHONE_NUMBER: {
    status: 409,
    message: '${phoneNumber} is already in this list.',
    when: 'A contact with this phone number is already in the list.',
  },
  KNOWLEDGE_BASE_NAME_TAKEN: {
    status: 409,
    message: 'A knowledge base named "${name}" already exists; choose another name.',
    when: 'Another knowledge base of the tenant has this name.',
  },
  KNOWLEDGE_BASE_IN_USE: {
    status: 409,
    message: "The agent ${agents} searches this knowledge base; remove it from the agent's knowledgeBaseIds first, then delete it.",
    when: 'Deleting a knowledge base an agent searches.',
  },
  CAMPAIGN_NAME_TAKEN: {
    status: 409,
    message: 'A campaign named "${name}" already exists; choose another name.',
    when: 'Another campaign of the tenant has this name.',
  },
  CAMPAIGN_NOT_DRAFT: {
    status: 409,
    message: 'Only DRAFT campaigns can be updated; this one is ${status}. Create a new campaign to change its settings.',
    when: 'Updating a campaign that has left DRAFT.',
  },
  'CAMPAIGN_NOT_DRAFT.changed': {
    status: 409,
    message: 'Only DRAFT campaigns can be updated; this one changed status meanwhile.',
    when: 'The campaign left DRAFT while the update was being made.',
  },
  CAMPAIGN_NOT_DELETABLE: {
    status: 409,
    message: 'A ${status} campaign cannot be deleted; cancel it first (DRAFT, COMPLETED and CANCELLED campaigns can be deleted).',
    when: 'Deleting a campaign that is scheduled, running or paused.',
  },
  CAMPAIGN_NOT_READY: {
    status: 409,
    message:
      'The campaign has no ${what}; set ${field} with PATCH while it is DRAFT (a SCHEDULED campaign cannot be changed: cancel it and create a new one).',
    when: 'Starting a campaign without an agent, voice number or contact list.',
  },
  CAMPAIGN_NOT_STARTABLE: {
    status: 409,
    message: 'Only a campaign that is DRAFT or SCHEDULED can be started; this one is ${status}.',
    when: 'Starting a campaign that is running, paused or finished.',
  },
  CAMPAIGN_NOT_RUNNING: {
    status: 409,
    message: 'Only a campaign that is RUNNING can be paused; this one is ${status}.',
    when: 'Pausing a campaign that is not running.',
  },
  CAMPAIGN_NOT_PAUSED: {
    status: 409,
    message: 'Only a campaign that is PAUSED can be resumed; this one is ${status}.',
    when: 'Resuming a campaign that is not paused.',
  },
  CAMPAIGN_FINISHED: {
    status: 409,
    message: 'The campaign is already ${status}; there is nothing to cancel.',
    when: 'Cancelling a completed or cancelled campaign.',
  },
  TEST_CHAT_ENDED: {
    status: 409,
    message: 'This chat has ended (${reason}); start a new chat to talk to the agent again.',
    when: 'A message is sent to a test chat the agent already ended.',
  },
  TEST_CHAT_BUSY: {
    status: 409,
    message: 'The agent was still answering another message in this chat; send yours again.',
    when: 'Two messages are sent to one test chat at once.',
  },
  BROWSER_CALL_NEEDS_LIVE_STT: {
    status: 409,
    message:
      '${agent} has no live speech-to-text to listen with; choose Deepgram in its Voice settings (and connect a Deepgram key under Integrations) to call it from the browser.',
    when: 'A browser call is asked of an agent whose speech-to-text is not a live recogniser (none, or one that takes whole utterances).',
  },
  TEST_SUITE_VOICE_NEEDS_STT: {
    status: 409,
    message:
      '${agent} has no speech-to-text to hear the caller with, and none ships offline; choose one in its Voice settings (Deepgram with a key under Integrations or DEEPGRAM_API_KEY, or an OpenAI-compatible speech server: SPEECH_API_URL) to run its suites through the voice pipeline, or run them as text.',
    when: 'A test suite run through the voice pipeline (voice=true) is asked of an agent (or version) without a speech-to-text.',
  },
  TEST_SUITE_VOICE_SPEECH_TO_SPEECH: {
    status: 409,
    message:
      '${agent} converses through a speech-to-speech model; a suite runs through the staged voice pipeline (speech-to-text, model, text-to-speech) only, so run its suites as text.',
    when: 'A test suite run through the voice pipeline (voice=true) is asked of an agent (or version) that converses through a speech-to-speech model.',
  },
  WALLET_EMPTY: {
    status: 409,
    message: 'The wallet balance is ${balance} ${currency}; credit the wallet before starting calls.',
    when: 'Starting a campaign with no money in the wallet.',
  },
  'WALLET_EMPTY.resume': {
    status: 409,
    message: 'The wallet balance is ${balance} ${currency}; credit the wallet before resuming calls.',
    when: 'Resuming a campaign with no money in the wallet.',
  },
  'WALLET_EMPTY.browserCall': {
    status: 409,
    message: 'The wallet balance is ${balance} ${currency}; credit the wallet before calling the agent.',
    when: 'A browser call is asked for with no money in the wallet (its speech and model are billed as test cost).',
  },
  WHATSAPP_CAMPAIGN_EXISTS: {
    status: 409,
    message:
      'Agent ${agentId} already has a WhatsApp campaign${existing}; change it with PUT /api/v1/whatsapp/campaigns/${campaignId} instead of creating another.',
    when: 'The agent has a WhatsApp campaign already (one per agent).',
  },
  SMS_CAMPAIGN_EXISTS: {
    status: 409,
    message:
      'Agent ${agentId} already has an SMS campaign${existing}; change it with PUT /api/v1/sms-agent/campaigns/${campaignId} instead of creating another.',
    when: 'The agent has an SMS campaign already (one per agent).',
  },
  WHATSAPP_NOT_CONNECTED: {
    status: 409,
    message:
      'WhatsApp is not connected; connect it with PUT /api/v1/integrations/whatsapp (businessAccountId, accessToken, appSecret, phoneNumberId) from the dashboard.',
    when: 'Listing WhatsApp sender numbers before WhatsApp is connected.',
  },
  CALL_NOT_LIVE: {
    status: 409,
    message: 'The call has already ended; only a live call can be hung up.',
    when: 'Hanging up a call that has ended.',
  },
  NO_INBOUND_AGENT: {
    status: 409,
    message:
      'Voice number ${phoneNumber} has no inbound agent to answer the call; give it one (PATCH /voice-numbers/${id} with inboundAgentId) and call again.',
    when: 'Simulating an inbound call on a number with no inbound agent: nobody would answer, so no call is placed or billed.',
  },
  NOT_A_SIMULATOR_NUMBER: {
    status: 409,
    message: 'Voice number ${phoneNumber} uses ${provider}; simulated calls need a SIMULATOR number.',
    when: 'Simulating an inbound call on a number of a real provider.',
  },
  IDEMPOTENCY_KEY_IN_USE: {
    status: 409,
    message: 'A request with this Idempotency-Key is still being processed; retry in a moment.',
    when: 'The first request with this key has not finished.',
  },

  // 408, 413, 414, 415, 422, 429, 431
  REQUEST_TIMEOUT: {
    status: 408,
    message: 'The request was not received in time; the connection is closed.',
    when: 'The client sent the headers or body too slowly.',
  },
  URI_TOO_LONG: {
    status: 414,
    message: 'A path parameter is longer than ${max} characters; ids are 36-character UUIDs.',
    when: 'A path parameter is too long to be any id.',
  },
  REQUEST_HEADER_FIELDS_TOO_LARGE: {
    status: 431,
    message: 'The request line and headers exceed ${max} bytes; send a shorter URL or fewer, smaller headers.',
    when: "The URL and headers together are over Node's header size limit.",
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    message: 'The request body is larger than this endpoint accepts; send a smaller one.',
    when: 'The body is over the size limit of the endpoint.',
  },
  'PAYLOAD_TOO_LARGE.csv': {
    status: 413,
    message: 'The CSV file is larger than 5 MB; split it into smaller files.',
    when: 'A contacts CSV over 5 MB.',
  },
  'PAYLOAD_TOO_LARGE.document': {
    status: 413,
    message: 'The file is larger than ${limit}; split it or upload a smaller one.',
    when: 'A knowledge document over the upload limit.',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: 'This content type is not accepted here; send the body as application/json.',
    when: 'A body that is not JSON on a JSON route.',
  },
  'UNSUPPORTED_MEDIA_TYPE.csv': {
    status: 415,
    message: 'Send the CSV as multipart/form-data with the file in a field named "file".',
    when: 'A contacts or do-not-call CSV import whose body is not multipart, whatever its content type.',
  },
  'UNSUPPORTED_MEDIA_TYPE.fileSource': {
    status: 415,
    message: 'Upload a file source as multipart/form-data with the fields sourceType=file, sourceName and file.',
    when: 'A file knowledge source sent as JSON.',
  },
  UNSUPPORTED_FILE_TYPE: {
    status: 415,
    message: '"${fileName}" is not a supported document; upload a PDF, DOCX, TXT, Markdown (.md) or HTML file.',
    when: 'An uploaded document is of a format knowledge bases do not read.',
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    message: 'This Idempotency-Key was already used for a different request; use a new key for a new request.',
    when: 'The key was used before with another method, path or body.',
  },
  RATE_LIMITED: {
    status: 429,
    message: 'Too many requests: at most ${max} per minute are allowed for this key; retry in ${after}.',
    when: 'More requests in a minute than RATE_LIMIT_PER_MINUTE, per API key, user or address.',
  },
  'RATE_LIMITED.login': {
    status: 429,
    message: 'Too many failed sign-ins for this account or from this address; try again in ${after}, or reset the password.',
    when: 'LOGIN_FAILURES_PER_ACCOUNT failed sign-ins for the e-mail address, or LOGIN_FAILURES_PER_ADDRESS from the client address, within AUTH_FAILURE_WINDOW_SECONDS; Retry-After says when to try again.',
  },
  'RATE_LIMITED.invalidKey': {
    status: 429,
    message: 'Too many requests with an invalid API key from this address; check the key, and try again in ${after}.',
    when: 'INVALID_API_KEYS_PER_ADDRESS requests with an invalid API key from the client address within AUTH_FAILURE_WINDOW_SECONDS; Retry-After says when to try again.',
  },
  'RATE_LIMITED.webhook': {
    status: 429,
    message: 'Too many webhook requests from this address: at most ${max} a second are accepted; retry in ${after}.',
    when: 'A provider webhook (calls, messages, media) arrives from an address that sent more than WEBHOOK_RATE_LIMIT_PER_SECOND in the second.',
  },

  // 5xx
  INTERNAL_ERROR: {
    status: 500,
    message: 'Something went wrong on our side; try again, and quote the request id if it keeps happening.',
    when: 'An unexpected failure; it is logged with the request id.',
  },
  PROVIDER_ERROR: {
    status: 502,
    message: '${provider} refused to hang up the call: ${reason}',
    when: 'The telephony provider refused a hang-up.',
  },
  'PROVIDER_ERROR.answerCall': {
    status: 502,
    message: '${provider} refused to answer the incoming call: ${reason}',
    when: 'The telephony provider refused to answer (or turn away) an incoming call; the call is recorded FAILED, and a retried webhook turns it away.',
  },
  'PROVIDER_ERROR.whatsappNumbers': {
    status: 502,
    message: 'WhatsApp refused to list the sender numbers: ${reason}',
    when: 'The WhatsApp Graph API refused to list the sender numbers.',
  },
  'PROVIDER_ERROR.browserCall': {
    status: 502,
    message: "The agent's voice is not available: ${reason}",
    when: "A browser call is asked for and the agent's text-to-speech provider cannot be reached or has no voice for it.",
  },
  'PROVIDER_ERROR.voices': {
    status: 502,
    message: '${provider} could not list its voices: ${reason}',
    when: 'Listing voices (GET /voices, or saving an agent, whose voice is checked against them) failed at the text-to-speech provider.',
  },
  DATABASE_UNAVAILABLE: {
    status: 503,
    message: 'The database is not reachable; the service cannot take requests yet.',
    when: '/readyz while the database does not answer within READY_TIMEOUT_MS; any request once the embedded database has failed inside a statement (the service then exits to be restarted).',
  },
  DATABASE_TIMEOUT: {
    status: 503,
    message: 'The database took too long to answer this request; try again in a moment.',
    when: 'A statement of the request ran longer than DB_STATEMENT_TIMEOUT_MS (PostgreSQL) and was cancelled.',
  },
  JOB_QUEUE_UNAVAILABLE: {
    status: 503,
    message: 'The job queue is not started; this process cannot take background work yet.',
    when: '/readyz while the job queue is starting or stopping, or its connection to the database fails.',
  },
} as const satisfies Record<string, ErrorEntry>;

/**
 * Fastify and its plugins refuse some requests with a 4xx of their own; the code has always been
 * the status text in capitals and the sentence theirs, so every 4xx Node names is declared.
 */
export const FRAMEWORK_CODES = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  402: 'PAYMENT_REQUIRED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  407: 'PROXY_AUTHENTICATION_REQUIRED',
  408: 'REQUEST_TIMEOUT',
  409: 'CONFLICT',
  410: 'GONE',
  411: 'LENGTH_REQUIRED',
  412: 'PRECONDITION_FAILED',
  413: 'PAYLOAD_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  416: 'RANGE_NOT_SATISFIABLE',
  417: 'EXPECTATION_FAILED',
  418: 'I_M_A_TEAPOT',
  421: 'MISDIRECTED_REQUEST',
  422: 'UNPROCESSABLE_ENTITY',
  423: 'LOCKED',
  424: 'FAILED_DEPENDENCY',
  425: 'TOO_EARLY',
  426: 'UPGRADE_REQUIRED',
  428: 'PRECONDITION_REQUIRED',
  429: 'TOO_MANY_REQUESTS',
  431: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
  451: 'UNAVAILABLE_FOR_LEGAL_REASONS',
} as const;

export type FrameworkStatus = keyof typeof FRAMEWORK_CODES;
type FrameworkKey = `${(typeof FRAMEWORK_CODES)[FrameworkStatus]}.framework`;

const framework = Object.fromEntries(
  Object.entries(FRAMEWORK_CODES).map(([status, code]) => [
    `${code}.framework`,
    {
      status: Number(status),
      message: '${message}',
      when: `Fastify or one of its plugins refused the request with ${status} ${STATUS_CODES[status]}; the sentence is theirs.`,
    },
  ]),
) as Record<FrameworkKey, { readonly status: number; readonly message: '${message}'; readonly when: string }>;

export const errorCatalogue = { ...declared, ...framework };

export type ErrorKey = keyof typeof errorCatalogue;
type CodeOf<K extends string> = K extends `${infer Code}.${string}` ? Code : K;
/** A code the API may answer with: one declared above, so an undeclared one fails typecheck. */
export type ErrorCode = CodeOf<ErrorKey>;

export const codeOf = (key: ErrorKey): ErrorCode => key.split('.')[0] as ErrorCode;

type ParamNames<T extends string> = T extends `${string}\${${infer Name}}${infer Rest}` ? Name | ParamNames<Rest> : never;
export type ParamsOf<K extends ErrorKey> = ParamNames<(typeof errorCatalogue)[K]['message']>;
export type ErrorParams<K extends ErrorKey> = Record<ParamsOf<K>, string | number>;
export function renderMessage(template: string, params: Record<string, string | number> = {}): string {
  return template.replace(/\$\{(\w+)\}/g, (_, name: string) => String(params[name]));
}
