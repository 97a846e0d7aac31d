import { type ReactNode, useEffect, useId, useRef, useState } from 'react';

/**
 * A list's search box. The list follows what is typed a moment after typing stops, not at every
 * key, so a word typed is one request.
 */
export function SearchFilter({
  label,
  value,
  onChange,
  placeholder,
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  placeholder?: string;
}) {
  const id = useId();
  const [text, setText] = useState(value);
  // The latest callback, without restarting the wait each time the page renders.
  const report = useRef(onChange);
  report.current = onChange;
  useEffect(() => {
    if (text === value) return;
    const timer = setTimeout(() => report.current(text), 250);
    return () => clearTimeout(timer);
  }, [text, value]);
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="search"
        value={text}
        onChange={(event) => setText(event.target.value)}
        {...(placeholder ? { placeholder } : {})}
      />
    </div>
  );
}

/** A list's filter: "Any" first, then the given options. */
export function FilterSelect({
  label,
  value,
  onChange,
  children,
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  children: ReactNode;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} onChange={(event) => onChange(event.target.value)}>
        <option value="">Any</option>
        {children}
      </select>
    </div>
  );
}
