"""Operations beside a search, never changing it: checkpoint and resume, progress, profiles, atomic writes."""
