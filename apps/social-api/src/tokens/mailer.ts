import type { FastifyBaseLogger } from 'fastify';
import { createTransport } from 'nodemailer';
import type { Config } from '../config';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

/**
 * SMTP when MAIL_SERVER is set (STARTTLS required with MAIL_USE_TLS); otherwise, outside production,
 * mails go to the log. In production without MAIL_SERVER there is no mailer (undefined): a mail
 * carries a secret (a reset link works as a password), and production logs are read by many.
 */
export function createMailer(
  mail: Config['mail'],
  mode: Config['mode'],
  log: FastifyBaseLogger,
): Mailer | undefined {
  if (!mail.server) {
    if (mode === 'production') return undefined;
    return {
      async send(m) {
        log.info(
          { mail: { from: mail.sender, to: m.to, subject: m.subject, text: m.text } },
          'mail not sent (MAIL_SERVER is not set); its text follows',
        );
      },
      close: () => undefined,
    };
  }
  const transport = createTransport({
    host: mail.server,
    port: mail.port,
    secure: false,
    requireTLS: mail.useTls,
    ignoreTLS: !mail.useTls,
    auth: mail.username ? { user: mail.username, pass: mail.password ?? '' } : undefined,
    connectionTimeout: 10_000,
    socketTimeout: 20_000,
  });
  return {
    async send(m) {
      await transport.sendMail({
        from: mail.sender,
        to: m.to,
        subject: m.subject,
        text: m.text,
        html: m.html,
      });
    },
    close: () => transport.close(),
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The Flask backend's reset mail: greets by username, gives the link, signed "The Microblog Team". */
export function resetPasswordMail(to: string, username: string, url: string): Mail {
  const text = [
    `Dear ${username},`,
    '',
    'To reset your password click on the following link:',
    '',
    url,
    '',
    'If you have not requested a password reset simply ignore this message.',
    '',
    'Sincerely,',
    '',
    'The Microblog Team',
    '',
    'Note: replies to this email address are not monitored.',
  ].join('\n');
  const u = escapeHtml(url);
  const html = [
    `<p>Dear ${escapeHtml(username)},</p>`,
    `<p>To reset your password <a href="${u}">click here</a>.</p>`,
    "<p>Alternatively, you can paste the following link in your browser's address bar:</p>",
    `<p>${u}</p>`,
    '<p>If you have not requested a password reset simply ignore this message.</p>',
    '<p>Sincerely,</p>',
    '<p>The Microblog Team</p>',
    '<p><small>Note: replies to this email address are not monitored.</small></p>',
  ].join('\n');
  return { to, subject: 'Reset Your Password', text, html };
}
