/**
 * A knowledge base as a business keeps one: a large staff and customer handbook (generated,
 * thousands of distinct words, the common words of questions everywhere) with the hand-written
 * documents of test/fixtures/knowledge/corpus.json planted in it, and their questions, worded
 * differently from their answers. A question counts as answered when one of the top results holds
 * its answer's words. Deterministic: the same seed gives the same corpus.
 */
import { readFileSync } from 'node:fs';
import { chunkText } from '../src/modules/knowledge/chunking.ts';
import { seeded } from '../test/seeded.ts';

interface PlantedCorpus {
  documents: { name: string; sections: { heading: string; passages: { id: string; text: string }[] }[] }[];
  questions: { question: string; passageId: string; answer: string }[];
}

export interface Question {
  question: string;
  answer: string;
}

const random = seeded;

const words = (text: string) => text.split(/\s*,\s*/);

// Slots shared by every topic: who, where, when, how much, which system.
const SHARED: Record<string, string[]> = {
  team: words(
    'payroll, facilities, procurement, logistics, customer care, field service, compliance, internal audit, treasury, legal, marketing, recruitment, learning and development, quality assurance, warehouse operations, fleet management, information security, data protection, health and safety, accounts payable, accounts receivable, credit control, sales operations, product support, research, engineering, dispatch, reception, estates, catering services',
  ),
  role: words(
    'line manager, team leader, shift supervisor, site manager, duty officer, regional director, HR business partner, payroll administrator, fleet coordinator, facilities coordinator, safety representative, first aider, fire warden, data protection officer, procurement lead, account manager, service engineer, customer adviser, warehouse operative, receptionist, graduate trainee, apprentice, contractor, agency worker, intern',
  ),
  site: words(
    'Aldermoor House, the Wrenfield depot, the Castlegate office, the Brackley distribution centre, the Ostrander laboratory, the Millbrook call centre, the Harrowgate warehouse, the Penhallow showroom, the Kingsmere training centre, the Tolliver yard, the Quayside annexe, the Saltmarsh workshop',
  ),
  period: words(
    'two working days, three business days, five working days, ten working days, one calendar week, fourteen days, twenty-one days, thirty days, six weeks, two months, one quarter, the end of the month, the next payroll run, forty-eight hours, twenty-four hours, seventy-two hours',
  ),
  amount: words('£12, £18.50, £25, £40, £45, £60, £75, £90, £120, £150, £240, £300, £450, £600, £1200, 5%, 10%, 15%, 20%, 25%'),
  system: words(
    'the Horizon portal, the PeopleHub app, the Ledgerline expenses tool, the Fleetwise booking system, the ServiceDesk ticket queue, the intranet, the Beacon rota planner, the Clearpath learning platform, the Vaultdoc records archive, the Tally procurement catalogue',
  ),
  day: words('Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday, weekday, weekend, bank holiday'),
  time: words('7:00, 7:30, 8:00, 8:30, 9:00, 9:30, 12:00, 13:00, 14:00, 16:30, 17:00, 17:30, 18:00, 19:00, 20:00, 22:00'),
};

interface Topic {
  heading: string;
  slots: Record<string, string[]>;
  sentences: string[];
}

// Topics of a large employer's handbook and customer guides: the words of the planted questions
// (pay, park, book, cancel, car, insurance, loan, bill, deposit, phone, open, cost, month) are
// common here, so a question's common words match many chunks and only its rare words are telling.
const TOPICS: Topic[] = [
  {
    heading: 'Annual leave',
    slots: {
      kind: words('annual leave, unpaid leave, compassionate leave, study leave, carry-over days, bought holiday, time off in lieu'),
    },
    sentences: [
      'Requests for {kind} are made in {system} and approved by your {role} within {period}.',
      'You may carry up to {period} of {kind} into the next holiday year if your {role} agrees in writing.',
      'During the peak season from {day} to {day} the {team} team limits {kind} to two people per shift.',
      'If your {kind} is refused you can ask the {team} team to review the decision within {period}.',
      'Part-time colleagues receive {kind} pro rata, rounded up to the nearest half day.',
    ],
  },
  {
    heading: 'Sickness absence',
    slots: { step: words('self-certification form, fit note, return-to-work interview, occupational health referral, phased return plan') },
    sentences: [
      'If you are unwell, phone your {role} before {time} on the first day of absence; a text message is not enough.',
      'After seven calendar days you must send a {step} to the {team} team through {system}.',
      'Statutory sick pay is paid from the fourth qualifying day and appears on the next payslip.',
      'A {step} is arranged by your {role} when you come back after more than {period}.',
      'Repeated short absences may lead to a {step}, which is meant to help rather than to discipline.',
    ],
  },
  {
    heading: 'Pay and payslips',
    slots: {
      item: words(
        'overtime, shift allowance, on-call payment, London weighting, commission, bonus, salary sacrifice, pension contribution',
      ),
    },
    sentences: [
      'Salaries are paid on the last working day of the month by bank transfer; payslips appear in {system}.',
      'Claims for {item} must reach the {team} team by the 10th of the month to be paid in the same month.',
      'If a payment is missing or wrong, raise it with {team} within {period} and quote your employee number.',
      'Your {item} is shown separately on the payslip together with tax and national insurance deductions.',
      'An advance on salary of up to {amount} may be agreed by the {role} in exceptional circumstances.',
    ],
  },
  {
    heading: 'Expenses',
    slots: {
      cost: words(
        'mileage, train fares, hotel stays, subsistence, client entertainment, taxi fares, parking charges, tolls, conference fees',
      ),
    },
    sentences: [
      'Submit {cost} in {system} with a photo of every receipt within {period} of the cost being incurred.',
      'The daily limit for {cost} is {amount}; anything above it needs approval from your {role} in advance.',
      'Mileage in a private car is reimbursed at 45p per mile for the first 10,000 business miles in a tax year.',
      'Expenses approved before the 20th are paid with that month’s salary; later claims roll over to the next month.',
      'Corporate card statements for {cost} must be reconciled by the {team} team before {day}.',
    ],
  },
  {
    heading: 'Company cars and the fleet',
    slots: {
      vehicle: words('pool car, van, electric car, hybrid estate, minibus, flatbed truck, company car, lease vehicle'),
      task: words('MOT, annual service, tyre check, windscreen repair, valet, charging cable replacement, telematics fitting'),
    },
    sentences: [
      'A {vehicle} is booked through {system} at least {period} before the journey and collected from {site}.',
      'Report any damage to the {vehicle} to the fleet coordinator on the day it happens, with photographs.',
      'The {team} team arranges the {task} for every {vehicle}; drivers are reminded by email {period} before it is due.',
      'Fuel for a {vehicle} is paid with the fuel card; personal mileage is declared at the end of each month.',
      'Penalty charges incurred while driving a {vehicle} are the driver’s own responsibility and are deducted from pay.',
      'Insurance for every {vehicle} is arranged centrally; drivers must hold a full licence for at least two years.',
    ],
  },
  {
    heading: 'Parking and travel to site',
    slots: { place: words('staff car park, visitor bays, bicycle shelter, electric charging bays, overflow car park, motorcycle bays') },
    sentences: [
      'The {place} at {site} opens at {time}; permits are issued by facilities and displayed on the dashboard.',
      'Visitors park in the {place} and sign in at reception, where a day pass is printed.',
      'Staff who car share may reserve a space in the {place} through {system}.',
      'A shuttle bus runs from the railway station to {site} every half hour between {time} and {time}.',
      'Parking in the {place} is free; vehicles left overnight without notice may be removed.',
    ],
  },
  {
    heading: 'Meeting rooms and desk booking',
    slots: { room: words('boardroom, training suite, quiet room, huddle space, video conference room, wellbeing room, project room') },
    sentences: [
      'Book the {room} in {system}; bookings not checked into within fifteen minutes are released.',
      'Catering for meetings in the {room} must be ordered from catering services {period} ahead.',
      'Cancel a booking for the {room} as soon as plans change so that colleagues can use it.',
      'Desks at {site} are booked by the day; a desk may be held for up to {period} in advance.',
      'The {room} seats twelve people around the table and has a screen, a camera and a whiteboard.',
    ],
  },
  {
    heading: 'IT equipment and accounts',
    slots: {
      device: words('laptop, docking station, headset, mobile phone, monitor, security token, smartcard, keyboard, webcam'),
      issue: words('password reset, locked account, lost device, broken screen, slow connection, software request, printer fault'),
    },
    sentences: [
      'Raise a {issue} in {system}; urgent problems can be phoned through to the service desk on extension 4400.',
      'A replacement {device} is issued within {period} once your {role} approves the request.',
      'Report a lost {device} to information security within twenty-four hours so that it can be wiped remotely.',
      'Passwords expire every ninety days and must be at least fourteen characters long.',
      'Personal software may not be installed on a company {device}; ask for it through {system}.',
    ],
  },
  {
    heading: 'Information security',
    slots: { threat: words('phishing email, suspicious phone call, tailgating, lost badge, unexpected invoice, USB stick found on site') },
    sentences: [
      'Forward any {threat} to the information security team and do not click links or open attachments.',
      'Customer data may only be stored in approved systems; never send it to a personal email address.',
      'Badges must be worn visibly at {site}; report a {threat} to reception straight away.',
      'Security awareness training is completed in {system} every year and takes about forty minutes.',
      'A data breach must be reported to the data protection officer within twenty-four hours of discovery.',
    ],
  },
  {
    heading: 'Health and safety',
    slots: {
      hazard: words('spillage, trailing cable, blocked fire exit, faulty ladder, forklift near miss, broken handrail, chemical leak'),
    },
    sentences: [
      'Report a {hazard} through {system} and warn colleagues until it is made safe.',
      'Fire alarms are tested every {day} at {time}; any other alarm means leave the building by the nearest exit.',
      'First aiders at {site} are listed on the noticeboard next to the lifts and on the intranet.',
      'Accidents, however minor, are recorded in the accident book within {period}.',
      'Personal protective equipment is issued free of charge and replaced when worn or damaged.',
    ],
  },
  {
    heading: 'Working hours and flexible working',
    slots: {
      pattern: words('compressed hours, staggered start, term-time working, job share, hybrid working, annualised hours, four-day week'),
    },
    sentences: [
      'Core hours are {time} to {time}; outside them you may arrange your day with your {role}.',
      'Applications for {pattern} are answered within {period} and may be trialled for three months.',
      'Overtime must be agreed before it is worked and is paid at time and a half on a {day}.',
      'Hybrid workers spend at least two days a week at {site} or with customers.',
      'Breaks of thirty minutes are unpaid; rest breaks of fifteen minutes are paid.',
    ],
  },
  {
    heading: 'Learning and development',
    slots: {
      course: words(
        'leadership programme, forklift licence, first aid certificate, Excel masterclass, negotiation workshop, coaching course',
      ),
    },
    sentences: [
      'Apply for the {course} in {system}; places are confirmed {period} before the start date.',
      'The company pays course fees of up to {amount} a year; leaving within a year means repaying part of it.',
      'Mandatory training must be completed within {period} of joining and refreshed every two years.',
      'Study days for a {course} are agreed with your {role} and recorded as study leave.',
    ],
  },
  {
    heading: 'Pensions and benefits',
    slots: {
      benefit: words(
        'cycle to work scheme, gym discount, season ticket loan, eye test voucher, private medical cover, life assurance, employee assistance programme',
      ),
    },
    sentences: [
      'The {benefit} is available after the probation period and is arranged through the {team} team.',
      'Employer pension contributions are {amount} of basic salary; you may choose to pay more.',
      'A season ticket loan is repaid in equal monthly instalments over ten months through payroll.',
      'The {benefit} renews every January; changes can be made in {system} during December.',
      'Private medical cover includes dental and optical treatment up to {amount} per year.',
    ],
  },
  {
    heading: 'Customer orders',
    slots: {
      product: words(
        'Veltrix boiler, Corvane heat pump, Sorrel radiator, Pemberly water softener, Tamsin thermostat, Orrin solar panel, Halcyon shower unit, Brisco smart meter',
      ),
    },
    sentences: [
      'Orders for the {product} placed before {time} are dispatched the same day from {site}.',
      'Customers can track delivery of a {product} online with the order number on their confirmation email.',
      'A deposit of {amount} secures installation of a {product}; the balance is due on completion.',
      'Orders may be cancelled free of charge within fourteen days of delivery under the distance selling rules.',
      'Delivery of a {product} to the Highlands and islands takes up to {period}.',
    ],
  },
  {
    heading: 'Returns and refunds',
    slots: { reason: words('damaged in transit, wrong item sent, changed mind, faulty on arrival, missing parts, late delivery') },
    sentences: [
      'Goods returned because they were {reason} are refunded within {period} of reaching the warehouse.',
      'Refunds go back to the original payment card; store credit is offered only when the card has expired.',
      'A returns label is emailed within one working day; the collection courier calls ahead.',
      'Items returned after thirty days are accepted only with approval from the customer care team leader.',
      'If a refund has not arrived after {period}, customer care can trace the payment with the bank reference.',
    ],
  },
  {
    heading: 'Installations and service visits',
    slots: {
      job: words(
        'boiler installation, annual service, gas safety check, heat pump commissioning, radiator flush, thermostat upgrade, meter exchange',
      ),
    },
    sentences: [
      'Appointments for a {job} are offered in morning or afternoon slots from {day} to {day}.',
      'An engineer phones thirty minutes before arriving; please make sure someone over eighteen is at home.',
      'A {job} costs {amount} including parts; extra work is quoted before it starts.',
      'If the engineer cannot get in, a missed-visit fee of {amount} is charged and a new slot is booked.',
      'Reschedule a {job} online or by phone at least {period} before the appointment.',
    ],
  },
  {
    heading: 'Customer billing',
    slots: { method: words('direct debit, debit card, credit card, bank transfer, standing order, cheque, PayPal, payment plan') },
    sentences: [
      'Bills are issued on the first of the month and can be paid by {method} within {period}.',
      'Customers paying by {method} receive a discount of {amount} on every bill.',
      'A late payment reminder is sent after {period}; a fee of {amount} is added to the next bill.',
      'Customers in difficulty can ask credit control for a payment plan spread over up to twelve months.',
      'Duplicate bills are downloaded from the customer portal or posted on request for {amount}.',
    ],
  },
  {
    heading: 'Complaints',
    slots: { stage: words('first response, formal investigation, senior review, final response letter, ombudsman referral') },
    sentences: [
      'Complaints are acknowledged within two working days; the {stage} follows within {period}.',
      'A customer who is unhappy with the {stage} may ask for it to be reviewed by a regional director.',
      'Goodwill payments of up to {amount} may be offered by a team leader without further approval.',
      'Every complaint is logged in {system} with the customer’s words and the outcome.',
    ],
  },
  {
    heading: 'Contact centre procedures',
    slots: {
      call: words('billing query, technical fault, new order, cancellation request, complaint, change of address, payment by phone'),
    },
    sentences: [
      'Callers choose option {n} in the phone menu for a {call}; the average wait is under four minutes.',
      'Before discussing an account, advisers confirm the caller’s name, postcode and date of birth.',
      'The contact centre is open {day} to {day} from {time} to {time}, and on Saturdays until noon.',
      'Calls are recorded for training and kept for ninety days before being deleted.',
      'An adviser may transfer a {call} to the {team} team when it needs a specialist.',
    ],
  },
  {
    heading: 'Warehouse operations',
    slots: { step: words('goods in, put-away, picking, packing, dispatch, cycle count, stock rotation, returns processing') },
    sentences: [
      'The {step} shift at {site} starts at {time}; hi-vis jackets and safety boots are compulsory.',
      'Pallets above 1.5 metres must be moved with the reach truck by a licensed operative.',
      'Discrepancies found during {step} are recorded in {system} before the end of the shift.',
      'Stock is rotated first in, first out; damaged stock goes to the quarantine cage.',
    ],
  },
  {
    heading: 'Procurement and suppliers',
    slots: {
      spend: words('stationery, cleaning contracts, IT hardware, consultancy, vehicle leasing, temporary labour, printing, uniforms'),
    },
    sentences: [
      'Purchases of {spend} over {amount} need three written quotes and a purchase order from {system}.',
      'New suppliers are checked by procurement for insurance, references and financial standing.',
      'Invoices are paid thirty days from receipt; small suppliers are paid within fourteen days.',
      'Contracts for {spend} are reviewed every two years by the procurement lead.',
    ],
  },
  {
    heading: 'Travel and accommodation',
    slots: { trip: words('client visit, trade show, site audit, overseas conference, training course, board meeting') },
    sentences: [
      'Travel for a {trip} is booked through the travel desk at least {period} in advance.',
      'Standard class rail travel is the default; first class is allowed for journeys over three hours.',
      'Hotel rates are capped at {amount} a night outside London and {amount} in London.',
      'Travel insurance for a {trip} abroad is provided by the company; collect the card from finance.',
    ],
  },
  {
    heading: 'Conduct and disciplinary procedure',
    slots: {
      stage: words('informal conversation, verbal warning, first written warning, final written warning, dismissal hearing, appeal'),
    },
    sentences: [
      'You may be accompanied at a {stage} by a colleague or a trade union representative.',
      'A {stage} stays on file for {period} and is then disregarded.',
      'An appeal must be made in writing within five working days of the decision.',
      'Gifts from suppliers worth more than {amount} must be declared in the gifts register.',
    ],
  },
  {
    heading: 'Recruitment and onboarding',
    slots: { check: words('right to work check, reference check, DBS check, credit check, driving licence check, medical questionnaire') },
    sentences: [
      'Offers are conditional on a {check}, which the recruitment team completes within {period}.',
      'New starters receive their {device} and badge on the first morning at {site}.',
      'A referral bonus of {amount} is paid when a recommended candidate completes probation.',
      'The probation period lasts six months and may be extended once by three months.',
    ],
  },
  {
    heading: 'Office facilities',
    slots: { service: words('post room, print room, kitchen, lockers, showers, prayer room, lost property, cleaning') },
    sentences: [
      'The {service} at {site} is open from {time} to {time} on weekdays.',
      'Faults with heating, lighting or the {service} are logged with facilities in {system}.',
      'Lockers are allocated for a year; keys lost are replaced for {amount}.',
      'Deliveries for staff are not accepted by the post room; use a collection point instead.',
    ],
  },
];

// Names of people, streets and projects made of syllables: a handbook's long tail of rare words.
const SYLLABLES = words(
  'al, bar, cor, dun, el, fen, gar, hol, in, jor, kel, lan, mor, nor, os, pen, quin, ros, sal, tor, ul, var, wen, yar, zel, bri, cal, dra, fi, gre',
);
const rareWord = (next: () => number) => {
  const length = 2 + Math.floor(next() * 2);
  const word = Array.from({ length }, () => SYLLABLES[Math.floor(next() * SYLLABLES.length)]).join('');
  return word[0]!.toUpperCase() + word.slice(1);
};
const CONTACTS = [
  'For questions about this section contact {name} {name} on extension {ext}.',
  'The {name} project, led by {name} {name}, changes this procedure from next year.',
  'At the {name} Road site the same rules apply; ask {name} {name} in {team} for details.',
  'Reference {code} in {system} holds the full procedure and its history.',
];

const SHARED_DEVICE = TOPICS.find((topic) => topic.heading === 'IT equipment and accounts')!.slots.device!;

function fill(sentence: string, slots: Record<string, string[]>, next: () => number): string {
  const pick = (items: string[]) => items[Math.floor(next() * items.length)]!;
  return sentence.replace(/\{(\w+)\}/g, (_, slot: string) => {
    if (slot === 'n') return String(1 + Math.floor(next() * 9));
    if (slot === 'ext') return String(2000 + Math.floor(next() * 7000));
    if (slot === 'name') return rareWord(next);
    if (slot === 'code') return `${rareWord(next).toUpperCase().slice(0, 3)}-${100 + Math.floor(next() * 900)}`;
    if (slot === 'device' && !slots.device) return pick(SHARED_DEVICE);
    return pick(slots[slot] ?? SHARED[slot]!);
  });
}

/** A handbook document: a title, sections of several paragraphs, each a few filled sentences. */
function handbookDocument(index: number, next: () => number): string {
  const division = SHARED.team![index % SHARED.team!.length]!;
  const lines = [`# Aldermoor Group handbook, part ${index + 1}: ${division}`];
  const pick = <T>(items: T[]) => items[Math.floor(next() * items.length)]!;
  for (let s = 0; s < 12; s++) {
    const topic = pick(TOPICS);
    lines.push(`## ${topic.heading} (${division}, section ${s + 1})`);
    for (let p = 0; p < 3; p++) {
      const count = 3 + Math.floor(next() * 3);
      const sentences = Array.from({ length: count }, () => fill(pick(topic.sentences), topic.slots, next));
      if (next() < 0.5) sentences.push(fill(pick(CONTACTS), topic.slots, next));
      lines.push(sentences.join(' '));
    }
  }
  return lines.join('\n\n');
}

export interface KnowledgeCorpus {
  /** Source documents (markdown), the planted ones among them. */
  documents: { name: string; text: string }[];
  /** Every chunk, as the service chunks the documents. */
  chunks: string[];
  questions: Question[];
  /** Distinct words in the chunks. */
  vocabulary: number;
}

/** At least `chunkCount` chunks of handbook with the planted documents and `questionCount` of their questions. */
export function knowledgeCorpus(chunkCount: number, questionCount = 50, seed = 21): KnowledgeCorpus {
  const planted = JSON.parse(readFileSync(new URL('../test/fixtures/knowledge/corpus.json', import.meta.url), 'utf8')) as PlantedCorpus;
  const plantedDocuments = planted.documents.map((document) => ({
    name: document.name,
    text: [
      `# ${document.name}`,
      ...document.sections.map((section) => [`## ${section.heading}`, ...section.passages.map((p) => p.text)].join('\n\n')),
    ].join('\n\n'),
  }));
  const documents = [...plantedDocuments];
  const chunks = plantedDocuments.flatMap((document) => chunkText(document.text));
  const next = random(seed);
  for (let index = 0; chunks.length < chunkCount; index++) {
    const text = handbookDocument(index, next);
    documents.push({ name: `Handbook part ${index + 1}`, text });
    chunks.push(...chunkText(text));
  }
  const vocabulary = new Set(chunks.flatMap((chunk) => chunk.toLowerCase().match(/[a-z][a-z'’-]+/g) ?? [])).size;
  return { documents, chunks, questions: planted.questions.slice(0, questionCount), vocabulary };
}
