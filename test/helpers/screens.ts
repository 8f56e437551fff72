import sharp from 'sharp';

// Pictures that look like what a test run leaves: a shop's pages at 640×400, drawn from SVG with
// sharp. The README's screenshots of the web interface show these, so they should read as screens.

const WIDTH = 640;
const HEIGHT = 400;
const PAGES = ['Home', 'Catalogue', 'Blue mug', 'Cart', 'Checkout', 'Payment'];
const ACCENTS = ['#2754c5', '#1f8a4c', '#8a6fd1', '#b8621b', '#0f7b8a', '#c62f2f'];

const escapeXml = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;');

function shopPage(title: string, accent: string, body: string, button: { text: string; colour: string }): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}">
  <rect width="100%" height="100%" fill="#f7f8fa"/>
  <rect width="100%" height="56" fill="${accent}"/>
  <text x="24" y="36" font-family="DejaVu Sans, sans-serif" font-size="22" fill="#fff" font-weight="bold">Mug Shop</text>
  <text x="${WIDTH - 24}" y="36" font-family="DejaVu Sans, sans-serif" font-size="16" fill="#fff" text-anchor="end">Cart (2)</text>
  <text x="40" y="110" font-family="DejaVu Sans, sans-serif" font-size="28" fill="#1d232b">${escapeXml(title)}</text>
  <rect x="40" y="140" width="240" height="160" rx="10" fill="#ffffff" stroke="#d9dee4"/>
  <circle cx="160" cy="220" r="48" fill="${accent}" opacity="0.85"/>
  <text x="320" y="170" font-family="DejaVu Sans, sans-serif" font-size="16" fill="#5d6875">${escapeXml(body)}</text>
  <rect x="320" y="250" width="200" height="46" rx="8" fill="${button.colour}"/>
  <text x="420" y="280" font-family="DejaVu Sans, sans-serif" font-size="17" fill="#fff" text-anchor="middle">${escapeXml(button.text)}</text>
</svg>`;
}

/** The n-th screen of a run: one of the shop's pages. Indices 1000–1002 are a visual diff's baseline, actual and diff. */
export async function shopScreen(index: number): Promise<Buffer> {
  let svg: string;
  if (index === 1000) svg = shopPage('Thank you!', '#2754c5', 'Order 4512 is paid.', { text: 'Track order', colour: '#1f8a4c' });
  else if (index === 1001) svg = shopPage('Payment failed', '#2754c5', 'Card declined (402).', { text: 'Try again', colour: '#c62f2f' });
  else if (index === 1002) {
    svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}">
  <rect width="100%" height="100%" fill="#e9ecf1"/>
  <rect x="36" y="78" width="330" height="44" fill="#ff2bd6" opacity="0.75"/>
  <rect x="316" y="150" width="260" height="30" fill="#ff2bd6" opacity="0.75"/>
  <rect x="316" y="246" width="208" height="54" fill="#ff2bd6" opacity="0.75"/>
</svg>`;
  } else {
    const page = PAGES[index % PAGES.length] as string;
    svg = shopPage(page, ACCENTS[index % ACCENTS.length] as string, `Step ${index + 1}: ${page.toLowerCase()} shown`, {
      text: index % PAGES.length === 5 ? 'Pay 24.00 €' : 'Continue',
      colour: '#2754c5',
    });
  }
  return sharp(Buffer.from(svg)).png().toBuffer();
}
