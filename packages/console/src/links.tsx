import { Anchor, type AnchorProps, Button, type ButtonProps } from '@mantine/core';
import { createLink } from '@tanstack/react-router';
import { type AnchorHTMLAttributes, forwardRef } from 'react';

// Mantine's Anchor and Button as router links: typed routes and params, real <a href> (keyboard, new tab).
type AnchorAttributes = AnchorHTMLAttributes<HTMLAnchorElement>;

const AnchorBase = forwardRef<HTMLAnchorElement, AnchorProps & AnchorAttributes>((props, ref) => <Anchor ref={ref} {...props} />);
const ButtonBase = forwardRef<HTMLAnchorElement, ButtonProps & AnchorAttributes>((props, ref) => (
  <Button component="a" ref={ref} {...props} />
));

export const AnchorLink = createLink(AnchorBase);
export const ButtonLink = createLink(ButtonBase);
