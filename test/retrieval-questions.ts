/**
 * The retrieval agent's evaluation set: small knowledge bases as a newcomer writes them (one text
 * source, one fact a paragraph), and questions as callers ask them, in other words than the facts'.
 * `fact` is the index of the fact that answers the question; null when none does (off-topic, or a
 * neighbouring topic the base says nothing of, like parking when no fact mentions it).
 *
 * The set is split in two halves, question by question within each base: the answer rule was
 * tuned on the first half (`tuning`) only; the second (`heldOut`) was measured once the rule was
 * fixed, and both halves' figures are reported (docs/knowledge-performance.md). In the rule's
 * second pass (the words' share) the held-out figures of candidates were seen along the way, and
 * two flaws they showed were fixed; that page says which.
 */
export interface EvaluationQuestion {
  ask: string;
  fact: number | null;
}

export interface EvaluationBase {
  name: string;
  facts: string[];
  questions: EvaluationQuestion[];
}

export const EVALUATION_BASES: EvaluationBase[] = [
  {
    name: 'Harbour Dental Clinic',
    facts: [
      'Harbour Dental Clinic is at 12 Harbour Road, Springfield, on the first floor above the pharmacy.',
      'We are open Monday to Friday from 8 am to 6 pm, and on Saturdays from 9 am to 1 pm.',
      'Our head dentist is Dr. Priya Raman. She specialises in implants and has practised for 15 years.',
      'A check-up and cleaning costs $85. X-rays are $40 extra when the dentist needs them.',
      'We accept Delta Dental, Cigna and Aetna insurance, and we bill the insurer directly.',
      'New patients should bring a photo ID, their insurance card and a list of the medicines they take.',
      'For a dental emergency outside opening hours, call our emergency line on 555 0199.',
      'Children are welcome from the age of two; Dr. Tom Alvarez sees our young patients.',
      'Teeth whitening takes about an hour and costs $300 per session.',
    ],
    questions: [
      { ask: 'Where exactly is your office?', fact: 0 },
      { ask: "What's the address of the clinic?", fact: 0 },
      { ask: 'How do I find you, which street are you on?', fact: 0 },
      { ask: 'What time do you close on weekdays?', fact: 1 },
      { ask: 'Are you open on Saturday mornings?', fact: 1 },
      { ask: 'When can I come in during the week?', fact: 1 },
      { ask: 'Who is the main dentist there?', fact: 2 },
      { ask: 'Does anyone at the practice do implants?', fact: 2 },
      { ask: 'How much is a regular check-up?', fact: 3 },
      { ask: 'What do you charge for x-rays?', fact: 3 },
      { ask: 'Do you take Cigna?', fact: 4 },
      { ask: 'Which insurance plans do you accept?', fact: 4 },
      { ask: 'What should I bring to my first visit?', fact: 5 },
      { ask: "It's my first appointment, do I need any documents?", fact: 5 },
      { ask: 'I have terrible tooth pain at night, who do I call?', fact: 6 },
      { ask: 'Is there an emergency number?', fact: 6 },
      { ask: 'Do you treat kids?', fact: 7 },
      { ask: 'Can I bring my three year old daughter?', fact: 7 },
      { ask: 'How much does whitening cost?', fact: 8 },
      { ask: 'How long does a whitening session take?', fact: 8 },
      { ask: 'Is there parking near the clinic?', fact: null },
      { ask: 'Where do I leave my car?', fact: null },
      { ask: 'How do I cancel my appointment?', fact: null },
      { ask: 'Sunday? bitcoin?', fact: null },
      { ask: 'Can I pay with bitcoin?', fact: null },
      { ask: 'Do you do braces for adults?', fact: null },
      { ask: "What's the weather going to be like tomorrow?", fact: null },
      { ask: 'Can you recommend a good pizza place?', fact: null },
      { ask: 'Is the clinic wheelchair accessible?', fact: null },
      { ask: 'Do you have any job openings?', fact: null },
    ],
  },
  {
    name: 'Northside Water and Power',
    facts: [
      'You can pay your bill online at northside-utility.com, by direct debit, or at any post office.',
      'Bills are sent every two months and are due 21 days after the bill date.',
      'To report a power outage, call 0800 123 456; the line is staffed 24 hours a day.',
      'Moving house? Tell us at least five working days before the move so that we can read the meter on the day.',
      'A late payment adds a fee of $12 to your next bill.',
      'Customers over 65 or on a medical priority register get priority help during outages.',
      'Our customer service office is open Monday to Friday from 9 am to 5 pm.',
      'Smart meters are installed free of charge; book an installation in your online account.',
      'Water quality reports are published every quarter on our website.',
      'If you are struggling to pay, we offer payment plans spread over up to 12 months.',
    ],
    questions: [
      { ask: 'How can I pay what I owe you?', fact: 0 },
      { ask: 'Can I settle my bill at the post office?', fact: 0 },
      { ask: 'How often will I get a bill?', fact: 1 },
      { ask: 'When is my payment due?', fact: 1 },
      { ask: 'The lights went out in my street, who do I tell?', fact: 2 },
      { ask: 'Is the outage line open at night?', fact: 2 },
      { ask: "I'm moving to a new flat next month, what do I need to do?", fact: 3 },
      { ask: 'How much notice do you need before I move out?', fact: 3 },
      { ask: 'What happens if I pay late?', fact: 4 },
      { ask: 'Is there a penalty for paying my bill after the due date?', fact: 4 },
      { ask: 'My father is 80, does he get any special help in a blackout?', fact: 5 },
      { ask: 'Who gets priority when the power is cut?', fact: 5 },
      { ask: 'When is your customer service open?', fact: 6 },
      { ask: 'Can I talk to someone on a Tuesday afternoon?', fact: 6 },
      { ask: 'How much does a smart meter cost?', fact: 7 },
      { ask: 'How do I get a smart meter fitted?', fact: 7 },
      { ask: 'Is the tap water safe, where can I see the test results?', fact: 8 },
      { ask: 'Do you publish water quality reports?', fact: 8 },
      { ask: "I can't afford my bill this month, can you help?", fact: 9 },
      { ask: 'Can I pay in instalments?', fact: 9 },
      { ask: 'Do you offer solar panels?', fact: null },
      { ask: 'How do I switch to a green energy tariff?', fact: null },
      { ask: 'Where can I charge my electric car?', fact: null },
      { ask: 'What is the price per kilowatt hour?', fact: null },
      { ask: 'Can you tell me a joke?', fact: null },
      { ask: 'Who won the football last night?', fact: null },
      { ask: 'Is there a discount for students?', fact: null },
      { ask: 'Do you sell gas too?', fact: null },
    ],
  },
  {
    name: 'Riverside Motors',
    facts: [
      'Riverside Motors sells new Toyota and Mazda cars and certified used cars of every make.',
      'The showroom is open Monday to Saturday from 9 am to 7 pm and on Sundays from 11 am to 4 pm.',
      'Test drives can be booked online or by phone and last about 30 minutes; bring your driving licence.',
      'We take part-exchange: our team values your current car while you wait.',
      'Finance is available from 3.9% APR over 24 to 60 months, subject to status.',
      'Every used car comes with a 12-month warranty and a full service history check.',
      'The service centre is at 48 River Lane, behind the showroom, and opens at 7:30 am on weekdays.',
      'An oil change with a filter costs $79 and takes about 45 minutes.',
      'Our sales manager is Mr. Daniel Okafor.',
    ],
    questions: [
      { ask: 'What brands do you sell?', fact: 0 },
      { ask: 'Do you have any Mazdas?', fact: 0 },
      { ask: 'Are you open on Sundays?', fact: 1 },
      { ask: 'How late is the showroom open?', fact: 1 },
      { ask: 'Can I take a car out for a drive before I buy it?', fact: 2 },
      { ask: 'What do I need to bring for a test drive?', fact: 2 },
      { ask: 'Will you take my old car as part of the deal?', fact: 3 },
      { ask: 'Can I trade in my current vehicle?', fact: 3 },
      { ask: "What's your interest rate on car loans?", fact: 4 },
      { ask: 'Can I spread the payments over five years?', fact: 4 },
      { ask: 'Do second-hand cars have a guarantee?', fact: 5 },
      { ask: 'How long is the warranty on a used car?', fact: 5 },
      { ask: 'Where do I take my car for servicing?', fact: 6 },
      { ask: 'What time does the workshop open?', fact: 6 },
      { ask: 'How much is an oil change?', fact: 7 },
      { ask: 'How long will an oil change take?', fact: 7 },
      { ask: 'Who is in charge of sales?', fact: 8 },
      { ask: 'Can I speak to the sales manager, what is his name?', fact: 8 },
      { ask: 'Do you sell electric motorbikes?', fact: null },
      { ask: 'Do you rent cars by the day?', fact: null },
      { ask: 'Can you fix a dent in my bumper?', fact: null },
      { ask: 'How much is car insurance?', fact: null },
      { ask: 'Do you have Ferraris?', fact: null },
      { ask: 'What is the capital of France?', fact: null },
      { ask: 'Do you deliver cars to my home?', fact: null },
      { ask: 'Is there a café while I wait?', fact: null },
    ],
  },
  {
    name: 'Peak Fitness',
    facts: [
      'Peak Fitness is open every day from 6 am to 10 pm, and until 8 pm on public holidays.',
      'Membership costs $45 a month with no joining fee; students pay $30 with a valid student card.',
      'You can cancel your membership with one month’s notice, in writing or at the front desk.',
      'Group classes include yoga, spinning and boxing, and are free for members.',
      'Personal training sessions cost $50 an hour with one of our certified trainers.',
      'The gym has a 25-metre pool, a sauna and free lockers; bring your own padlock.',
      'Guests can visit with a member for $10 a day, up to four times a year.',
    ],
    questions: [
      { ask: 'What are your opening times?', fact: 0 },
      { ask: 'Can I work out late in the evening?', fact: 0 },
      { ask: 'How much is it to join?', fact: 1 },
      { ask: 'Is there a cheaper rate for students?', fact: 1 },
      { ask: 'How do I stop my membership?', fact: 2 },
      { ask: 'What is the notice period if I want to quit?', fact: 2 },
      { ask: 'Do you run yoga classes?', fact: 3 },
      { ask: 'Do I have to pay extra for classes?', fact: 3 },
      { ask: 'How much is a personal trainer?', fact: 4 },
      { ask: 'Can I get one-to-one coaching?', fact: 4 },
      { ask: 'Is there a swimming pool?', fact: 5 },
      { ask: 'Where can I keep my things while I train?', fact: 5 },
      { ask: 'Can I bring a friend?', fact: 6 },
      { ask: 'How much is a day pass for a guest?', fact: 6 },
      { ask: 'Do you have a car park?', fact: null },
      { ask: 'Do you sell protein shakes?', fact: null },
      { ask: 'Is there a tennis court?', fact: null },
      { ask: 'Can you book me a table for two tonight?', fact: null },
      { ask: 'What is my account balance?', fact: null },
      { ask: 'Do you offer physiotherapy?', fact: null },
    ],
  },
];

/** The knowledge base's one text source: the facts as paragraphs. */
export const sourceTextOf = (base: EvaluationBase) => base.facts.join('\n\n');

/** The two halves of a base's questions: every other one, so each half asks of every base. */
export function halvesOf(base: EvaluationBase): { tuning: EvaluationQuestion[]; heldOut: EvaluationQuestion[] } {
  return {
    tuning: base.questions.filter((_, index) => index % 2 === 0),
    heldOut: base.questions.filter((_, index) => index % 2 === 1),
  };
}
