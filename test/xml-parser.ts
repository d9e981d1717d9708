import { createRequire } from 'node:module';

/**
 * A real XML parser for the tests that read XML we write (the JUnit report): @xmldom/xmldom,
 * loaded with require so that its typings, which pull the browser's DOM types into the whole
 * program (`/// <reference lib="dom" />`), stay out of the type check. The little used is typed here.
 */
interface XmlElement {
  getAttribute(name: string): string | null;
  getElementsByTagName(name: string): { length: number; [index: number]: XmlElement | undefined };
  textContent: string | null;
}
type Report = (message: string) => void;
interface XmlDom {
  DOMParser: new (options?: { errorHandler?: { warning: Report; error: Report; fatalError: Report } }) => {
    parseFromString(xml: string, type: 'text/xml'): XmlElement;
  };
}

const { DOMParser } = createRequire(import.meta.url)('@xmldom/xmldom') as XmlDom;

/** Parses `xml`, with every warning and error the parser reports. */
export function parseXml(xml: string): { document: XmlElement; problems: string[] } {
  const problems: string[] = [];
  const report = (message: string) => void problems.push(message);
  const document = new DOMParser({ errorHandler: { warning: report, error: report, fatalError: report } }).parseFromString(xml, 'text/xml');
  return { document, problems };
}
