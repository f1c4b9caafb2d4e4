package cli

import (
	"errors"
)

func fitDiscrete(env Env, args []string) error {
	return errors.New("fit discrete is not wired into this build yet")
}

func fitCox(env Env, args []string) error {
	return errors.New("fit cox is not wired into this build yet")
}
