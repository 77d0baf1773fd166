import { Alert, Anchor, Modal, type CSSVariablesResolver, createTheme, DEFAULT_THEME, darken, lighten, luminance } from '@mantine/core';

/*
 * The console's theme, readable in both colour schemes (WCAG AA, 4.5:1 for text; checked by
 * test/console/accessibility.test.ts with axe-core). Mantine's defaults put white text on mid shades
 * (green, yellow, indigo 6), grey-6 "dimmed" text on white and shade-9 text on light tints, all below
 * 4.5:1; the fixes live here once rather than in each page.
 */

/** WCAG's contrast ratio of two colours. */
function contrast(a: string, b: string): number {
  const [high, low] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (high + 0.05) / (low + 0.05);
}

/** AA for normal text, with a little room for anti-aliasing. */
const READABLE = 4.6;

/** `color` darkened (light scheme) or lightened (dark scheme) step by step until it reads on every background. */
function readableOn(color: string, backgrounds: string[], scheme: 'light' | 'dark'): string {
  let shade = color;
  for (let step = 0; step < 20 && backgrounds.some((b) => contrast(shade, b) < READABLE); step++) {
    shade = scheme === 'light' ? darken(shade, 0.05) : lighten(shade, 0.05);
  }
  return shade;
}

const gray = DEFAULT_THEME.colors.gray;
const dark = DEFAULT_THEME.colors.dark;
/** The backgrounds text sits on: the page, striped rows and code (gray 0-1), a hovered row; cards and inputs in dark. */
const LIGHT_BACKGROUNDS = [DEFAULT_THEME.white, gray[0], gray[1]];
const DARK_BACKGROUNDS = [dark[7], dark[6], dark[5]];

export const theme = createTheme({
  primaryColor: 'indigo',
  // Filled buttons and badges a shade darker than Mantine's 6, so that white text on them reads.
  primaryShade: 8,
  // Filled colours too light for white text (green, yellow, orange, cyan...) get black text instead:
  // at this luminance white and black text both reach 4.5:1, so whichever is chosen reads.
  autoContrast: true,
  luminanceThreshold: 0.183,
  components: {
    // A link inside text must not be told apart by colour alone.
    Anchor: Anchor.extend({ defaultProps: { underline: 'always' } }),
    // Dialogs' and alerts' × buttons are named for screen readers.
    Modal: Modal.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close' } } }),
    Alert: Alert.extend({ defaultProps: { closeButtonLabel: 'Close' } }),
  },
});

export const cssVariablesResolver: CSSVariablesResolver = (t) => {
  const light: Record<string, string> = {
    '--mantine-color-dimmed': readableOn(gray[6], LIGHT_BACKGROUNDS, 'light'),
    '--mantine-color-error': readableOn(t.colors.red[7], LIGHT_BACKGROUNDS, 'light'),
  };
  const darkScheme: Record<string, string> = {
    '--mantine-color-dimmed': readableOn(dark[2], DARK_BACKGROUNDS, 'dark'),
    '--mantine-color-error': readableOn(t.colors.red[5], DARK_BACKGROUNDS, 'dark'),
  };
  for (const [name, shades] of Object.entries(t.colors)) {
    // Text in a colour (c="green", anchors) and a light variant's text on its own tint and hover tint.
    light[`--mantine-color-${name}-text`] = readableOn(shades[8], LIGHT_BACKGROUNDS, 'light');
    light[`--mantine-color-${name}-light-color`] = readableOn(shades[9], [shades[1], shades[2]], 'light');
    darkScheme[`--mantine-color-${name}-text`] = readableOn(shades[4], DARK_BACKGROUNDS, 'dark');
  }
  return { variables: {}, light, dark: darkScheme };
};
