import { useState } from 'preact/hooks';
import type { LoginBody, Session, SignupBody } from '../../../src/api-types.ts';
import { api, session } from '../api.ts';
import { ErrorMessage, Field, fieldErrorOf, Form, useAction } from '../ui.tsx';

/**
 * Log in, or sign up a new tenant; both end in a dashboard session, and the app then opens `next`
 * (the page asked for before logging in), kept across the switch between the two forms.
 */
export function AuthPage({ mode, next }: { mode: 'login' | 'signup'; next: string | null }) {
  const [tenantName, setTenantName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const submit = useAction(async () => {
    // The answer's token (for API clients) is not kept: the service set the session's httpOnly cookie.
    if (mode === 'login') await api<Session>('POST', '/auth/login', { email, password } satisfies LoginBody);
    else await api<Session>('POST', '/auth/signup', { tenantName, email, password } satisfies SignupBody);
    session.started();
  });
  const signup = mode === 'signup';
  const keepNext = next ? `?next=${encodeURIComponent(next)}` : '';
  return (
    <main id="main" class="auth">
      <h1>{signup ? 'Create your callforge account' : 'Log in to callforge'}</h1>
      <Form onSubmit={submit.run}>
        {signup && (
          <Field
            label="Company name"
            value={tenantName}
            onValue={setTenantName}
            required
            autoComplete="organization"
            problem={fieldErrorOf(submit.error, '/tenantName')}
          />
        )}
        <Field
          label="Email"
          type="email"
          value={email}
          onValue={setEmail}
          required
          autoComplete="email"
          problem={fieldErrorOf(submit.error, '/email')}
        />
        <Field
          label="Password"
          type="password"
          value={password}
          onValue={setPassword}
          required
          autoComplete={signup ? 'new-password' : 'current-password'}
          hint={signup ? 'At least 8 characters.' : undefined}
          problem={fieldErrorOf(submit.error, '/password')}
        />
        <ErrorMessage error={submit.error} />
        <button type="submit" class="primary" disabled={submit.busy}>
          {signup ? 'Sign up' : 'Log in'}
        </button>
      </Form>
      <p>{signup ? <a href={`#/login${keepNext}`}>I already have an account</a> : <a href={`#/signup${keepNext}`}>Create an account</a>}</p>
    </main>
  );
}
