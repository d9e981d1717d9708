// Writes the documents under test/fixtures/knowledge/ that the knowledge extraction tests read.
import { writeFileSync } from 'node:fs';
import { Document, HeadingLevel, Packer, Paragraph } from 'docx';
import { breakTextIntoLines, PDFDocument, StandardFonts } from 'pdf-lib';

const FIXTURES = new URL('../test/fixtures/knowledge/', import.meta.url);
// Fixed dates keep the regenerated PDFs byte-identical.
const FIXTURE_DATE = new Date('2024-01-01T00:00:00Z');

const HANDBOOK_PAGES = [
  [
    'Northwind Clinic patient handbook.',
    'Northwind Clinic is open Monday to Friday, 8:00 to 18:00. The reception desk answers the phone during the same hours and books appointments for all of our doctors.',
    'Please arrive ten minutes before your appointment so that we can check your details.',
  ],
  [
    'If you cannot attend, cancel at least 24 hours in advance. Late cancellations and missed appointments are charged a cancellation fee of €25.',
    'Patients and visitors have free parking behind the building. The car park entrance is on Mill Street.',
  ],
];

async function handbookPdf(): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  pdf.setCreationDate(FIXTURE_DATE);
  pdf.setModificationDate(FIXTURE_DATE);
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const paragraphs of HANDBOOK_PAGES) {
    const page = pdf.addPage();
    const fontSize = 12;
    const lineHeight = 16;
    const maxWidth = page.getWidth() - 144;
    let y = page.getHeight() - 72;
    for (const paragraph of paragraphs) {
      for (const line of breakTextIntoLines(paragraph, [' '], maxWidth, (text) => font.widthOfTextAtSize(text, fontSize))) {
        page.drawText(line, { x: 72, y, font, size: fontSize });
        y -= lineHeight;
      }
      y -= lineHeight;
    }
  }
  return pdf.save();
}

async function blankPdf(): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  pdf.setCreationDate(FIXTURE_DATE);
  pdf.setModificationDate(FIXTURE_DATE);
  pdf.addPage();
  return pdf.save();
}

function handbookDocx(): Promise<Buffer> {
  const document = new Document({
    sections: [
      {
        children: [
          new Paragraph({ text: 'Northwind Clinic', heading: HeadingLevel.HEADING_1 }),
          new Paragraph('Welcome to Northwind Clinic. This handbook explains how visits work.'),
          new Paragraph({ text: 'Before your visit', heading: HeadingLevel.HEADING_2 }),
          new Paragraph('Bring your insurance card to every visit. New patients also bring a photo ID.'),
          new Paragraph({ text: 'Opening hours', heading: HeadingLevel.HEADING_2 }),
          new Paragraph('We are open Monday to Friday, 8:00 to 18:00.'),
          new Paragraph({ text: 'Cancellations', heading: HeadingLevel.HEADING_1 }),
          new Paragraph('Cancel at least 24 hours ahead to avoid the cancellation fee of €25.'),
        ],
      },
    ],
  });
  return Packer.toBuffer(document);
}

const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Northwind Clinic – Contact</title>
  <style>body { font-family: sans-serif; }</style>
  <script>window.analyticsId = 'tracking-snippet-42';</script>
</head>
<body>
  <nav><a href="/">Home</a> <a href="/services">Menu link services</a></nav>
  <main>
    <h1>Contact Northwind Clinic</h1>
    <p>Call us on 01 234 5678. Our helpline answers within two minutes during opening hours.</p>
    <h2>Other ways to reach us</h2>
    <p>Write to <a href="mailto:desk@northwind.example">the front desk</a> or visit in person.</p>
    <ul>
      <li>Email replies within one working day</li>
      <li>Letters are answered within a week</li>
    </ul>
    <img src="/map.png" alt="Map to the clinic">
  </main>
  <footer>Copyright footer text</footer>
  <script>document.title = 'changed by script';</script>
</body>
</html>
`;

const NOTES_MD = `# Billing notes

Invoices are sent on the first working day of the month. Payment is due within *14 days*.

## Payment methods

- Bank transfer
- Card payment at reception
- Direct debit, see the [billing page](https://northwind.example/billing)

## Questions

Ask the **billing team** at reception.
`;

writeFileSync(new URL('handbook.pdf', FIXTURES), await handbookPdf());
writeFileSync(new URL('blank.pdf', FIXTURES), await blankPdf());
writeFileSync(new URL('handbook.docx', FIXTURES), await handbookDocx());
writeFileSync(new URL('page.html', FIXTURES), PAGE_HTML);
writeFileSync(new URL('notes.md', FIXTURES), NOTES_MD);
