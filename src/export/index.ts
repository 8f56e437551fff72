import { answerFiles, type ExportFile, type ExportInput, type Format, imageFiles } from './files.ts';
import { allureFiles } from './formats/allure.ts';
import { htmlFiles } from './formats/html.ts';
import { junitFiles } from './formats/junit.ts';
import { xrayFiles } from './formats/xray.ts';

export { type ImageEntry, manifestOf, planImages, type RunAnswers, readRunAnswers } from './bundle.ts';
export { type ExportFile, type ExportInput, FORMATS, type Format, type ImageBytes } from './files.ts';
export { zipOf } from './zip.ts';

/**
 * The files a format writes beside the bundle: the bundle itself (answers, manifest, images);
 * `junit.xml`, whose attachment lines point at the bundle's images; `xray.json`; `allure-results/`;
 * `report.html`.
 */
export function formatFiles(format: Format, input: ExportInput): ExportFile[] {
  switch (format) {
    case 'bundle':
      return [...answerFiles(input), ...imageFiles(input)];
    case 'junit':
      return junitFiles(input);
    case 'xray':
      return xrayFiles(input);
    case 'allure':
      return allureFiles(input);
    case 'html':
      return htmlFiles(input);
  }
}

/** What a single download of a format holds: one file, or a folder (sent as a ZIP archive). */
export function downloadOf(format: Format, input: ExportInput): { files: ExportFile[]; archive: boolean } {
  switch (format) {
    case 'xray':
    case 'html':
      return { files: formatFiles(format, input), archive: false };
    // JUnit's attachment lines name image files: the archive carries them.
    case 'junit':
      return { files: [...junitFiles(input), ...imageFiles(input)], archive: true };
    default:
      return { files: formatFiles(format, input), archive: true };
  }
}
